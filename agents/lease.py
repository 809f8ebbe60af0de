"""The heartbeat that keeps a worker's lease on the run it drives.

`services.run_start(worker=...)` hands a running run to one worker at a time: a second worker
given the same run (the broker redelivers a task whose worker is slow, not dead) sees a live
lease and leaves the run alone; once the first worker has died its lease expires and the next
delivery takes over. While a worker drives a run, this thread renews the lease every third of
its length, so a long LLM or tool call never lets it lapse.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

from django.conf import settings
from django.db import close_old_connections

from planboard import services
from planboard.sql import close_thread_connection

logger = logging.getLogger(__name__)


def new_worker_id() -> str:
    """Unique per execution: host, process and a random part (threads share a process)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class LeaseKeeper:
    """Renews `worker`'s lease on a run in a daemon thread until stopped."""

    def __init__(self, *, run_id: int, worker: str) -> None:
        self.run_id = run_id
        self.worker = worker
        self.interval = float(settings.PLANBOARD_RUN_LEASE_SECONDS) / 3
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-run-{run_id}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                close_old_connections()
                try:
                    if not services.run_renew_lease(run_id=self.run_id, worker=self.worker):
                        # Lost (taken over or stopped): the driver sees it at its next check.
                        return
                except Exception:  # the database may be briefly away; try again next beat
                    logger.warning(
                        "renewing the lease of run %s failed", self.run_id, exc_info=True
                    )
        finally:
            close_thread_connection()
