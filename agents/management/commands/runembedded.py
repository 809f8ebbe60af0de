"""One command, a working app: the ASGI server and an agent worker in one process.

Without `REDIS_URL` (embedded mode) the Celery broker is `memory://`, so the worker must live in
the same process as the web server that queues the runs: this command starts a Celery worker
(threads pool) on a background thread, then serves `planboard.asgi:application` with daphne
in the foreground. Ctrl-C stops both. Runs still working at that moment resume from their
stored transcript the next time the command starts (the in-memory queue is gone by then, so
they are queued again on start-up).

With `REDIS_URL` set, workers are separate processes (`celery -A planboard worker`); this
command then only serves the web app and says so.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.runtime import host as run_host
from agents.sweeper import start_process_sweeper
from agents.tasks import resume_orphaned_runs, send_to_any_worker
from planboard.tasks import start_inbox_sweeps, start_schedule_sweeps

# A warm stop waits this long for runs in progress before the process exits anyway.
STOP_GRACE_SECONDS = 5.0


class EmbeddedWorker:
    """A Celery worker on a daemon thread, consuming the in-process broker."""

    def __init__(self, *, concurrency: int) -> None:
        from celery.worker import WorkController

        from planboard.celery import app, embedded_queues

        started = threading.Event()
        self.started = started

        class Controller(WorkController):
            def on_consumer_ready(self, consumer: Any) -> None:
                super().on_consumer_ready(consumer)
                started.set()

        app.finalize()
        app.set_current()
        # Runs are hosted here as in a worker process: many at once on one event loop; past
        # the memory limit the host fails the run that grew it but never ends this process
        # (the web server).
        run_host.enable(send_on=send_to_any_worker, recycle=False)
        self.controller = Controller(
            app=app,
            pool="threads",
            concurrency=concurrency,
            # Runs and the inbox's notifications alike: there is no other worker here.
            queues=embedded_queues(),
            hostname=f"embedded@{socket.gethostname()}",
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
            loglevel="INFO",
        )
        self.thread = threading.Thread(
            target=self.controller.start, name="embedded-worker", daemon=True
        )

    def start(self, timeout: float = 30.0) -> None:
        self.thread.start()
        if not self.started.wait(timeout):
            raise CommandError("The embedded worker did not start.")
        # The threads pool sends no worker_process_init: start this process's sweep here.
        start_process_sweeper()

    def stop(self) -> bool:
        """Stop consuming and hand the runs off; True when no run was left in progress."""
        run_host.shutdown()
        stopper = threading.Thread(target=self.controller.stop, daemon=True)
        stopper.start()
        stopper.join(STOP_GRACE_SECONDS)
        return not stopper.is_alive()


class Command(BaseCommand):
    help = (
        "Serve Planboard with daphne and, in embedded mode (no REDIS_URL), an in-process agent "
        "worker, so one command gives a working app."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="Interface to listen on.")
        parser.add_argument("--port", type=int, default=8000, help="Port to listen on.")
        parser.add_argument(
            "--concurrency",
            type=int,
            default=4,
            help="Agent runs the embedded worker executes at the same time.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # Imported here: daphne installs the Twisted asyncio reactor as it is imported.
        from daphne.endpoints import build_endpoint_description_strings
        from daphne.server import Server

        from planboard.asgi import application

        host: str = options["host"]
        port: int = options["port"]
        if not settings.DEBUG:
            call_command("collectstatic", interactive=False, verbosity=0)

        worker = None
        if settings.PLANBOARD_EMBEDDED:
            worker = EmbeddedWorker(concurrency=max(1, options["concurrency"]))
            worker.start()
            # No beat process here: the inbox's sweeps re-queue themselves on this worker.
            start_inbox_sweeps()
            # Schedules fire from the same worker: a sweep now, then one every tick.
            start_schedule_sweeps()
            resumed = resume_orphaned_runs()
            if resumed:
                self.stdout.write(f"Resumed {len(resumed)} agent run(s) left from the last time.")
        else:
            self.stdout.write(
                "REDIS_URL is set: agent runs go to Celery workers; start them with "
                "`celery -A planboard worker` (or `make worker`)."
            )

        self._print_welcome(host, port)
        try:
            Server(
                application=application,
                endpoints=build_endpoint_description_strings(host=host, port=port),
                signal_handlers=True,
                action_logger=None,
            ).run()
        except KeyboardInterrupt:
            pass
        finally:
            self.stdout.write("Stopping…")
            if worker is not None and not worker.stop():
                self.stdout.write(
                    "Agent runs still in progress will resume the next time the app starts."
                )
                sys.stdout.flush()
                sys.stderr.flush()
                # Worker threads would keep the interpreter alive until their runs end.
                os._exit(0)

    def _print_welcome(self, host: str, port: int) -> None:
        from planboard.management.commands.ensure_demo_user import (
            admin_credentials,
            demo_credentials,
        )

        shown_host = f"[{host}]" if ":" in host else host
        url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else shown_host}:{port}/"  # noqa: S104
        mode = "embedded (in-process worker)" if settings.PLANBOARD_EMBEDDED else "web only"
        self.stdout.write(self.style.SUCCESS(f"Planboard is running at {url}  [{mode}]"))
        self.stdout.write(f"Model: {settings.PLANBOARD_LLM_MODEL}")
        users = get_user_model().objects
        for label, (username, password) in (
            ("Log in as", demo_credentials()),
            ("Admin (/admin/)", admin_credentials()),
        ):
            if users.filter(username=username).exists():
                self.stdout.write(f"{label}: {username} / {password}  (local use only)")
        if not users.filter(username=demo_credentials()[0]).exists():
            self.stdout.write("No demo user yet: run `python manage.py ensure_demo_user`.")
        self.stdout.write('Try: "Plan a three-day trip to Kyoto". Quit with Ctrl-C.')
        sys.stdout.flush()
