"""`RunHost.take`: a run's message hands it to the host, which takes the lease on its own
database lane (ahead of the runs it drives) and then drives it; a run another worker holds
is left alone, and a stopping host takes nothing. In-process, on PostgreSQL: the host's lane
threads have connections of their own."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents import tasks
from agents.runtime.host import RunHost
from planboard import services
from planboard.models import AgentRun
from tests.support.scripted import ScriptedModel, say


@pytest.fixture
def host(postgres: None, settings: Any) -> Iterator[RunHost]:
    settings.PLANBOARD_TOOL_TIMEOUT = 5
    running = RunHost(send_on=tasks.send_to_any_worker, recycle=False).start()
    yield running
    running.stop(timeout=5)


def settle(host: RunHost) -> None:
    """Wait until the host has acted on what it was handed and started nothing new."""
    asyncio.run_coroutine_threadsafe(asyncio.sleep(0), host.loop).result(5)
    deadline = time.monotonic() + 20
    while (host._starting or host.runs) and time.monotonic() < deadline:
        time.sleep(0.02)


def queued_run(user: Any) -> AgentRun:
    session = services.session_create(owner=user, need_user_confirm=False)
    _, run = services.message_post(session_id=session.pk, author=user, content="Say hello")
    return run


def test_a_queued_run_is_leased_by_the_host_and_driven_to_its_end(
    host: RunHost, user: Any, scripted_model: ScriptedModel
) -> None:
    scripted_model.script.append(say("Hello."))
    run = queued_run(user)
    assert host.take(run.pk)
    settle(host)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert run.started_at is not None
    assert len(scripted_model.requests) == 1


def test_a_run_another_worker_holds_is_left_alone(host: RunHost, user: Any) -> None:
    run = queued_run(user)
    until = timezone.now() + timedelta(seconds=60)
    AgentRun.objects.filter(pk=run.pk).update(
        status=AgentRun.Status.RUNNING, lease_owner="elsewhere:1:abc", lease_expires_at=until
    )
    assert host.take(run.pk)
    assert host.take(run.pk)  # a duplicate message: one start
    settle(host)
    run.refresh_from_db()
    assert (run.status, run.lease_owner) == (AgentRun.Status.RUNNING, "elsewhere:1:abc")
    assert run.pk not in host.runs


def test_a_stopping_host_takes_nothing() -> None:
    # Its loop never started: nothing may reach it.
    host = RunHost(send_on=tasks.send_to_any_worker, recycle=False)
    try:
        host.accepting = False
        assert host.take(1) is False
    finally:
        host.loop.close()
        host.lane.close()
