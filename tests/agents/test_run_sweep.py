"""The sweep that resumes runs of dead workers: which runs it takes (expired leases and lost
dispatches, never live leases or stopped runs), that it takes each once even with several
sweepers at once, and the sweeper thread every worker process runs."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError, transaction
from django.utils import timezone

from agents import loop, sweeper
from planboard import services
from planboard.models import AgentRun, ChatSession
from tests.support import db
from tests.support.env import DISPATCHED
from tests.support.processes import wait_for
from tests.support.scripted import ScriptedModel, say


def new_run(session: ChatSession, user: Any) -> AgentRun:
    _, run = services.message_post(session_id=session.pk, author=user, content="Hello")
    return run


def set_run(run: AgentRun, *, status: str, owner: str = "", seconds: float | None) -> None:
    AgentRun.objects.filter(pk=run.pk).update(
        status=status,
        lease_owner=owner,
        lease_expires_at=None if seconds is None else timezone.now() + timedelta(seconds=seconds),
    )


def sessions_of(user: Any, count: int) -> list[ChatSession]:
    return [services.session_create(owner=user, need_user_confirm=False) for _ in range(count)]


def test_a_running_run_whose_lease_expired_is_dispatched_again_once(
    session: ChatSession, user: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = new_run(session, user)
    set_run(run, status=AgentRun.Status.RUNNING, owner="dead-worker", seconds=-1)
    DISPATCHED.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.run_reclaim_expired_leases(limit=10) == [run.pk]
    assert DISPATCHED == [run.pk]
    run.refresh_from_db()
    # No owner, a fresh deadline: another sweep leaves it to the worker it was handed to.
    assert run.status == AgentRun.Status.RUNNING and run.lease_owner == ""
    remaining = (run.lease_expires_at - timezone.now()).total_seconds()
    assert (
        settings.PLANBOARD_RUN_LEASE_SECONDS - 5 < remaining <= settings.PLANBOARD_RUN_LEASE_SECONDS
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert services.run_reclaim_expired_leases(limit=10) == []
    assert DISPATCHED == [run.pk]


def test_live_leases_stopped_and_waiting_runs_are_left_alone(user: Any) -> None:
    live, finished, paused, waiting = (new_run(s, user) for s in sessions_of(user, 4))
    set_run(live, status=AgentRun.Status.RUNNING, owner="busy-worker", seconds=30)
    # Stale lease values on runs that are not active must not bring them back.
    set_run(finished, status=AgentRun.Status.SUCCEEDED, owner="old", seconds=-100)
    set_run(paused, status=AgentRun.Status.WAITING_FOR_USER, owner="old", seconds=-100)
    set_run(waiting, status=AgentRun.Status.QUEUED, seconds=None)  # waits for admission
    assert services.run_reclaim_expired_leases(limit=10) == []
    live.refresh_from_db()
    assert live.lease_owner == "busy-worker"


def test_a_queued_run_whose_dispatch_was_lost_is_dispatched_again(
    user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    lost, fresh = (new_run(s, user) for s in sessions_of(user, 2))
    set_run(lost, status=AgentRun.Status.QUEUED, seconds=-1)  # dispatched a lease ago, unclaimed
    set_run(fresh, status=AgentRun.Status.QUEUED, seconds=50)  # dispatched just now
    DISPATCHED.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.run_reclaim_expired_leases(limit=10) == [lost.pk]
    assert DISPATCHED == [lost.pk]
    lost.refresh_from_db()
    assert lost.status == AgentRun.Status.QUEUED and lost.lease_expires_at > timezone.now()


def test_the_sweep_takes_at_most_limit_runs_the_longest_expired_first(user: Any) -> None:
    runs = [new_run(s, user) for s in sessions_of(user, 3)]
    for age, run in zip((-10, -30, -20), runs, strict=True):
        set_run(run, status=AgentRun.Status.RUNNING, owner="dead", seconds=age)
    assert services.run_reclaim_expired_leases(limit=2) == [runs[1].pk, runs[2].pk]
    assert services.run_reclaim_expired_leases(limit=2) == [runs[0].pk]


def test_a_reclaimed_run_resumes_on_a_new_worker_and_the_old_one_lost_it(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    run = new_run(session, user)
    set_run(run, status=AgentRun.Status.RUNNING, owner="dead-worker", seconds=-1)
    services.run_reclaim_expired_leases(limit=10)
    # The old worker, were it only slow, can no longer renew; it stops at its next check.
    assert not services.run_renew_lease(run_id=run.pk, worker="dead-worker")
    scripted_model.script.append(say("Resumed."))
    result = loop.execute_run(run_id=run.pk, worker="new-worker")
    assert result.status == AgentRun.Status.SUCCEEDED
    assert len(scripted_model.requests) == 1


def test_the_task_leaves_a_live_lease_alone_and_the_sweep_resumes_the_run_later(
    session: ChatSession,
    user: Any,
    scripted_model: ScriptedModel,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """A duplicate message finding a live lease drops it (no re-scheduling): should the
    leasing worker die, the sweep dispatches the run once the lease has expired."""
    from agents import tasks

    run = new_run(session, user)
    set_run(run, status=AgentRun.Status.RUNNING, owner="worker-a", seconds=30)
    DISPATCHED.clear()
    assert tasks.run_agent.run(run.pk) == "leased elsewhere"
    assert scripted_model.requests == []
    with django_capture_on_commit_callbacks(execute=True):
        assert sweeper.sweep_once().reclaimed == []
    set_run(run, status=AgentRun.Status.RUNNING, owner="worker-a", seconds=-1)  # A died
    with django_capture_on_commit_callbacks(execute=True):
        assert sweeper.sweep_once().reclaimed == [run.pk]
    assert DISPATCHED == [run.pk]
    scripted_model.script.append(say("Done."))
    assert tasks.run_agent.run(run.pk) == AgentRun.Status.SUCCEEDED


@pytest.mark.postgres
def test_two_sweepers_at_once_never_take_the_same_run(postgres: None, user: Any) -> None:
    """PostgreSQL: rows another sweeper holds are skipped (SKIP LOCKED), and a row it has
    released with a fresh deadline no longer counts as expired."""
    runs = [new_run(s, user) for s in sessions_of(user, 6)]
    for run in runs:
        set_run(run, status=AgentRun.Status.RUNNING, owner="dead", seconds=-5)
    DISPATCHED.clear()
    holding, release = threading.Event(), threading.Event()
    first: list[int] = []

    def slow_sweeper() -> None:
        try:
            with transaction.atomic():  # holds its row locks until released
                first.extend(services.run_reclaim_expired_leases(limit=3))
                holding.set()
                assert release.wait(30)
        finally:
            db.close_thread_connections()

    thread = threading.Thread(target=slow_sweeper)
    thread.start()
    assert holding.wait(30)
    second = services.run_reclaim_expired_leases(limit=10)  # does not wait for the first
    release.set()
    thread.join(30)
    assert len(first) == 3 and len(second) == 3
    assert sorted(first + second) == sorted(r.pk for r in runs)
    assert sorted(DISPATCHED) == sorted(r.pk for r in runs)  # each dispatched exactly once
    assert services.run_reclaim_expired_leases(limit=10) == []


@pytest.mark.postgres
def test_many_sweepers_racing_dispatch_each_run_once(postgres: None, user: Any) -> None:
    runs = [new_run(s, user) for s in sessions_of(user, 12)]
    for run in runs:
        set_run(run, status=AgentRun.Status.RUNNING, owner="dead", seconds=-5)
    DISPATCHED.clear()
    start = threading.Barrier(4)
    taken: list[list[int]] = []

    def sweep() -> None:
        try:
            start.wait(30)
            taken.append(services.run_reclaim_expired_leases(limit=100))
        finally:
            db.close_thread_connections()

    threads = [threading.Thread(target=sweep) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    every = [pk for ids in taken for pk in ids]
    assert sorted(every) == sorted(r.pk for r in runs), "a run was taken twice or not at all"
    assert sorted(DISPATCHED) == sorted(every)


@pytest.mark.django_db(transaction=True)
def test_the_sweeper_thread_survives_database_errors_and_keeps_sweeping(
    user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    run = new_run(session, user)
    set_run(run, status=AgentRun.Status.RUNNING, owner="dead", seconds=-1)
    real = services.run_reclaim_expired_leases
    calls = {"n": 0}

    def flaky(*, limit: int) -> list[int]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OperationalError("the database went away")
        return real(limit=limit)

    monkeypatch.setattr(services, "run_reclaim_expired_leases", flaky)
    DISPATCHED.clear()
    thread = sweeper.Sweeper(interval=0.05).start()
    try:
        wait_for(lambda: DISPATCHED, timeout=30, what="the sweep after a failed one")
    finally:
        thread.stop()
    assert not thread.alive()
    assert thread.failures == 1 and thread.sweeps >= 2
    assert DISPATCHED == [run.pk]


def test_each_process_starts_one_sweeper_and_none_when_turned_off(settings: Any) -> None:
    settings.PLANBOARD_SWEEP_SECONDS = 0
    assert sweeper.start_process_sweeper() is None
    settings.PLANBOARD_SWEEP_SECONDS = 3600  # started, but never sweeps during this test
    first = sweeper.start_process_sweeper()
    try:
        assert first is not None and first.alive()
        assert sweeper.start_process_sweeper() is first
    finally:
        assert first is not None
        first.stop()


def test_the_default_sweep_interval_is_a_quarter_lease() -> None:
    from django.conf import settings as project_settings

    assert (
        project_settings.PLANBOARD_SWEEP_SECONDS == project_settings.PLANBOARD_RUN_LEASE_SECONDS / 4
    )
