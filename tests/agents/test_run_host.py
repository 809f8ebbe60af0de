"""The run host (agents/runtime): many runs in one worker process, cancel while the model
thinks, and a SIGTERM hand-off to another worker — real `celery -A planboard worker`
processes on Redis and PostgreSQL, a paced OpenAI-compatible model server in this process.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from agents.models import AgentStep
from planboard import services
from planboard.models import AgentRun, ChatSession, Message, PlanEvent
from tests.support.paced_model import PacedOpenAI
from tests.support.processes import (
    Child,
    database_url,
    own_redis_db,
    process_env,
    start_worker,
    wait_for,
)

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.slow]

APP_NAME = "planboard-test-run-host"
# Generous bounds: they only stop a broken test from hanging.
FINISH = 120.0


@pytest.fixture
def paced() -> Iterator[PacedOpenAI]:
    server = PacedOpenAI(delay=1.0, answers=2).start()
    yield server
    server.stop()


@pytest.fixture
def worker_env(
    redis_url: str, postgres: None, test_broker: Any, paced: PacedOpenAI, settings: Any
) -> dict[str, str]:
    broker = own_redis_db(redis_url, int(redis_url.rsplit("/", 1)[1] or 0))
    test_broker(broker)
    settings.PLANBOARD_LLM_MODEL = "openai/paced-model"
    return process_env(
        broker,
        PLANBOARD_LLM_MODEL="openai/paced-model",
        PLANBOARD_LLM_API_BASE=paced.base_url,
        PLANBOARD_LLM_API_KEY="sk-test",
        PLANBOARD_LLM_RETRY_DELAY="0",
        PLANBOARD_RUN_LEASE_SECONDS="10",
        PGAPPNAME=APP_NAME,
    )


def start_runs(user_model: Any, count: int, prefix: str) -> list[tuple[ChatSession, AgentRun]]:
    started = []
    for number in range(count):
        user = user_model.objects.create_user(f"{prefix}-{number}")
        session = services.session_create(owner=user, need_user_confirm=False)
        _, run = services.message_post(
            session_id=session.pk, author=user, content=f"Plan it [run:{prefix}{number}]"
        )
        started.append((session, run))
    return started


def active(run_ids: list[int]) -> int:
    return AgentRun.objects.filter(pk__in=run_ids, status__in=AgentRun.ACTIVE_STATUSES).count()


class ConnectionCounter(threading.Thread):
    """The most PostgreSQL connections the worker held at once while the test ran."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.most = 0
        self.stop = threading.Event()

    def run(self) -> None:
        with psycopg.connect(database_url(), autocommit=True) as conn:
            while not self.stop.wait(0.1):
                row = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                    [APP_NAME],
                ).fetchone()
                self.most = max(self.most, int(row[0]) if row else 0)


def test_one_worker_process_drives_thirty_runs_at_once_on_few_connections(
    worker_env: dict[str, str],
    children: list[Child],
    paced: PacedOpenAI,
    django_user_model: Any,
) -> None:
    worker = start_worker(children, worker_env, "host")  # --pool=solo: one process
    counter = ConnectionCounter()
    counter.start()
    runs = start_runs(django_user_model, 30, "many")
    ids = [run.pk for _, run in runs]

    def finished() -> bool:
        assert worker.alive(), worker.tail()
        return active(ids) == 0

    wait_for(finished, timeout=FINISH, what=f"30 runs to finish\n{worker.tail()}")
    counter.stop.set()
    counter.join(5)
    statuses = set(AgentRun.objects.filter(pk__in=ids).values_list("status", flat=True))
    assert statuses == {AgentRun.Status.SUCCEEDED}, worker.tail()
    # They waited on the model together, not one after the other.
    assert paced.max_in_flight > 1
    assert len(paced.first_seen) == 30
    # The runs' database work goes through PLANBOARD_RUN_DB_THREADS (4) threads, plus the
    # host's own thread (heartbeat, cancel check) and the task's connection that takes each
    # lease: bounded whatever the number of runs.
    assert 0 < counter.most <= 6
    for session, run in runs:
        answers = Message.objects.filter(session=session, role=Message.Role.ASSISTANT)
        assert answers.count() == 2
        assert PlanEvent.objects.filter(actor_run=run, action="plan_created").count() == 1


def test_a_cancel_ends_the_wait_on_the_model_within_seconds(
    worker_env: dict[str, str],
    children: list[Child],
    paced: PacedOpenAI,
    django_user_model: Any,
) -> None:
    paced.delay = 600.0  # the model would think for ten minutes
    worker = start_worker(children, worker_env, "host")
    ((session, run),) = start_runs(django_user_model, 1, "cancel")
    wait_for(
        lambda: "cancel0" in paced.first_seen,
        timeout=FINISH,
        what=f"the model request\n{worker.tail()}",
    )
    services.run_cancel(session_id=session.pk)
    cancelled_at = time.monotonic()
    wait_for(
        lambda: AgentRun.objects.get(pk=run.pk).status == AgentRun.Status.CANCELLED,
        timeout=30,
        what=f"the cancel\n{worker.tail()}",
    )
    took = time.monotonic() - cancelled_at
    print(f"the cancel took effect {took:.2f}s after it was asked for")
    # Generous for a loaded machine (the host checks every 0.5 s): the answer was 10 min away.
    assert took < 20
    assert AgentStep.objects.get(run=run).status == AgentStep.Status.DISCARDED
    assert not Message.objects.filter(session=session, role=Message.Role.ASSISTANT).exists()
    assert worker.alive()


def test_sigterm_hands_runs_off_to_another_worker_without_doing_anything_twice(
    worker_env: dict[str, str],
    children: list[Child],
    paced: PacedOpenAI,
    django_user_model: Any,
) -> None:
    paced.delay = 2.0
    paced.answers = 4
    first = start_worker(children, worker_env, "first")
    runs = start_runs(django_user_model, 5, "handoff")
    ids = [run.pk for _, run in runs]

    def all_past_their_first_tool_call() -> bool:
        assert first.alive(), first.tail()
        done = PlanEvent.objects.filter(actor_run_id__in=ids, action="plan_created").count()
        return done == len(ids)

    wait_for(all_past_their_first_tool_call, timeout=FINISH, what=f"progress\n{first.tail()}")
    first.popen.send_signal(signal.SIGTERM)
    stopping = time.monotonic()
    first.popen.wait(60)
    # No tool call was in flight (plan tools are units of the database lane): well within
    # ten seconds on an idle machine; generous here.
    assert time.monotonic() - stopping < 30, first.tail()
    left = AgentRun.objects.filter(pk__in=ids, status=AgentRun.Status.RUNNING)
    assert set(left.values_list("lease_owner", flat=True)) <= {""}, first.tail()

    second = start_worker(children, worker_env, "second")

    def finished() -> bool:
        assert second.alive(), second.tail()
        return active(ids) == 0

    wait_for(finished, timeout=FINISH, what=f"the runs to finish\n{second.tail()}")
    for session, run in runs:
        run.refresh_from_db()
        assert run.status == AgentRun.Status.SUCCEEDED, run.error
        messages = list(Message.objects.filter(session=session).order_by("id"))
        calls = [c["id"] for m in messages if m.role == "assistant" for c in m.tool_calls or []]
        results = [m.tool_call_id for m in messages if m.role == "tool"]
        assert sorted(calls) == sorted(results)  # every call answered exactly once
        assert PlanEvent.objects.filter(actor_run=run, action="plan_created").count() == 1
    interrupted = AgentStep.objects.filter(run_id__in=ids, status=AgentStep.Status.INTERRUPTED)
    assert interrupted.exists()  # the model calls in flight were asked again elsewhere
