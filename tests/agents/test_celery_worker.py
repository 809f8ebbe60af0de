"""Real Celery workers (separate processes) on the Redis broker, sharing a PostgreSQL database.

Each test uses its own queue name, so tests sharing one Redis database never take each other's
messages. The workers run the offline demo model, which is deterministic and acts only through
tool calls, so a worker can be killed at any moment and the outcome checked exactly.

Run locally with, e.g.:
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<you> \\
    PLANBOARD_TEST_REDIS_URL=redis://127.0.0.1:6379/5 .venv/bin/pytest tests/test_celery_worker.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery

from agents.models import AgentStep
from planboard import services
from planboard.models import AgentRun, ChatSession, Message, Plan, PlanEvent, State
from tests.support.processes import database_url, wait_for

ROOT = Path(__file__).resolve().parents[2]
MUTATING_TOOLS = {"create_plan", "update_subtask_state", "finish_subtask", "finish_plan"}

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

# Where `send_to_test_worker` puts runs; set per test by the `broker` fixture.
TARGET: dict[str, str] = {}


def send_to_test_worker(run_id: int, session_id: int | None = None) -> None:
    """The run dispatcher for these tests: the real task, on this test's queue."""
    producer = Celery("planboard-test-producer", broker=TARGET["url"])
    try:
        producer.send_task("agents.tasks.run_agent", args=[run_id], queue=TARGET["queue"])
    finally:
        producer.close()


@pytest.fixture
def broker(redis_url: str, postgres: None, settings: Any) -> Iterator[dict[str, str]]:
    TARGET.update(url=redis_url, queue=f"planboard-test-{uuid.uuid4().hex[:12]}")
    settings.PLANBOARD_RUN_DISPATCHER = "tests.agents.test_celery_worker.send_to_test_worker"
    yield dict(TARGET)
    TARGET.clear()


class Workers:
    """Starts `celery -A planboard worker` processes on the test's queue."""

    def __init__(self, tmp_path: Path, target: dict[str, str]) -> None:
        self.tmp_path = tmp_path
        self.target = target
        self.processes: list[subprocess.Popen] = []

    def start(self, *, step_delay: float, visibility_timeout: int = 3600) -> subprocess.Popen:
        number = len(self.processes) + 1
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            # A killed worker's lease lapses quickly, so its run is taken over soon after.
            "PLANBOARD_RUN_LEASE_SECONDS": "3",
            "REDIS_URL": self.target["url"],
            "CELERY_BROKER_URL": self.target["url"],
            # The worker's own dispatches (the lease sweep, a hand-off) go to this test's queue.
            "PLANBOARD_TASK_QUEUE": self.target["queue"],
            "PLANBOARD_VISIBILITY_TIMEOUT": str(visibility_timeout),
            "PLANBOARD_DEMO_STEP_DELAY": str(step_delay),
            "PLANBOARD_LLM_MODEL": "",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "planboard",
            "worker",
            "--pool",
            "solo",  # the task runs in the worker process itself: SIGKILL ends it for sure
            "-Q",
            self.target["queue"],
            "-n",
            f"test{number}-{self.target['queue']}@%h",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
            "-l",
            "info",
        ]
        log = (self.tmp_path / f"worker{number}.log").open("w")
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def logs(self) -> str:
        return "\n".join(p.read_text()[-4000:] for p in sorted(self.tmp_path.glob("worker*.log")))

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


@pytest.fixture
def workers(tmp_path: Path, broker: dict[str, str]) -> Iterator[Workers]:
    pool = Workers(tmp_path, broker)
    yield pool
    pool.stop_all()


def run_status(run_id: int) -> str:
    return AgentRun.objects.get(pk=run_id).status


def test_a_worker_runs_the_agent_pauses_for_confirmation_and_resumes(user, workers: Workers):
    workers.start(step_delay=0)
    session = services.session_create(owner=user)  # confirmation on
    _, run = services.message_post(
        session_id=session.pk, author=user, content="Plan a three-day trip to Kyoto"
    )
    wait_for(
        lambda: run_status(run.pk) == AgentRun.Status.WAITING_FOR_USER,
        timeout=180,
        what="the plan to be presented",
        details=workers.logs,
    )
    plan = Plan.objects.get(pk=ChatSession.objects.get(pk=session.pk).current_plan_id)
    assert plan.subtasks.count() == 4 and plan.state == State.TODO

    _, resumed = services.message_post(session_id=session.pk, author=user, content="go")
    assert resumed.pk == run.pk
    wait_for(
        lambda: run_status(run.pk) == AgentRun.Status.SUCCEEDED,
        timeout=180,
        what="the run to finish",
        details=workers.logs,
    )
    plan.refresh_from_db()
    assert plan.state == State.DONE
    assert not Message.objects.filter(session=session, content__startswith="Error").exists()


def test_a_run_survives_its_worker_being_killed(user, workers: Workers):
    """SIGKILL the worker mid-run; once its lease expires the new worker's sweep dispatches the
    run again (the dead worker had acknowledged the message when it adopted the run), and the
    run finishes with every tool call executed exactly once and no message lost."""
    visibility = 3
    first = workers.start(step_delay=1.0, visibility_timeout=visibility)
    session = services.session_create(owner=user, need_user_confirm=False)
    _, run = services.message_post(
        session_id=session.pk, author=user, content="Plan a three-day trip to Kyoto"
    )

    def thinking_after_some_work() -> bool:
        # Kill while the model is answering (the demo model sleeps there), after real effects.
        done = Plan.objects.filter(session=session, subtasks__state=State.DONE).exists()
        return done and run.steps.filter(status=AgentStep.Status.CALLING).exists()

    wait_for(
        thinking_after_some_work,
        timeout=180,
        what="a model call after the first subtask is done",
        details=workers.logs,
    )
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    killed_at = {
        "messages": Message.objects.filter(session=session).count(),
        "status": run_status(run.pk),
    }
    assert killed_at["status"] == AgentRun.Status.RUNNING  # the dead worker never finished it
    time.sleep(visibility + 1)  # past the lease (and the visibility timeout)

    workers.start(step_delay=0.2, visibility_timeout=visibility)
    wait_for(
        lambda: run_status(run.pk) == AgentRun.Status.SUCCEEDED,
        timeout=240,
        what="the swept run to finish",
        details=workers.logs,
    )

    run.refresh_from_db()
    second_log = (workers.tmp_path / "worker2.log").read_text()
    assert "agents.tasks.run_agent[" in second_log and "received" in second_log
    # The step the dead worker was in is kept for review as interrupted, then redone.
    statuses = list(run.steps.order_by("number").values_list("status", flat=True))
    assert statuses.count(AgentStep.Status.INTERRUPTED) == 1
    assert statuses[-1] == AgentStep.Status.COMPLETED
    messages = list(Message.objects.filter(session=session).order_by("id"))
    assert len(messages) >= killed_at["messages"]  # nothing stored before the kill was lost
    assert messages[0].role == "user" and messages[0].content.startswith("Plan a three-day")
    calls = [c for m in messages if m.role == "assistant" for c in m.tool_calls or []]
    results = [m for m in messages if m.role == "tool"]
    # Every call has exactly one result, and no result lacks its call.
    assert sorted(c["id"] for c in calls) == sorted(r.tool_call_id for r in results)
    assert not [r.content for r in results if r.content.startswith("Error")]
    # Each effect happened once: one event per successful mutating call, nothing more.
    effects = PlanEvent.objects.filter(actor_run=run)
    assert effects.count() == sum(1 for r in results if r.tool_name in MUTATING_TOOLS)
    assert effects.filter(action="plan_created").count() == 1
    plan = Plan.objects.get(session=session)
    for subtask in plan.subtasks.all():
        assert effects.filter(subtask_id=subtask.pk, action="subtask_finished").count() == 1
    assert plan.state == State.DONE
    finals = [m for m in messages if m.role == "assistant" and not m.tool_calls]
    assert len(finals) == 1 and finals[0].content.startswith("All done")
