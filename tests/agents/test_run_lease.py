"""A run is driven by one worker at a time, even past the broker's visibility timeout: the
driving worker holds a lease on the run row (renewed by a heartbeat); a second worker handed
the same run leaves it alone while the lease is live and takes over once it has expired."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents import loop
from agents.models import AgentStep
from planboard import services
from planboard.models import AgentRun, ChatSession, Message
from tests.support import db
from tests.support.scripted import ScriptedModel, do, say


def queued_run(session: ChatSession, user: Any) -> AgentRun:
    _, run = services.message_post(session_id=session.pk, author=user, content="Hello")
    return run


def hold_lease(run: AgentRun, owner: str, *, seconds: float) -> None:
    AgentRun.objects.filter(pk=run.pk).update(
        status=AgentRun.Status.RUNNING,
        lease_owner=owner,
        lease_expires_at=timezone.now() + timedelta(seconds=seconds),
    )


def test_a_run_with_a_live_lease_elsewhere_is_left_alone(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    run = queued_run(session, user)
    hold_lease(run, "worker-a", seconds=60)
    result = loop.execute_run(run_id=run.pk, worker="worker-b")
    assert result.status == AgentRun.Status.RUNNING
    assert result.lease_owner == "worker-a"
    assert scripted_model.requests == []  # the model was never asked by the second worker
    assert not AgentStep.objects.filter(run=run).exists()


def test_an_expired_lease_is_taken_over_and_the_run_resumes(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    run = queued_run(session, user)
    hold_lease(run, "worker-a", seconds=-1)  # worker A died a while ago
    scripted_model.script.append(say("Hi there."))
    result = loop.execute_run(run_id=run.pk, worker="worker-b")
    assert result.status == AgentRun.Status.SUCCEEDED
    assert len(scripted_model.requests) == 1
    assert (result.lease_owner, result.lease_expires_at) == ("", None)  # released at the end


def test_a_worker_whose_lease_was_taken_over_discards_its_answer(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    run = queued_run(session, user)
    # While worker A's model is answering, its lease lapses and worker B takes over.
    scripted_model.script.extend(
        [do(lambda _: hold_lease(run, "worker-b", seconds=60)), say("stale answer")]
    )
    result = loop.execute_run(run_id=run.pk, worker="worker-a")
    assert result.lease_owner == "worker-b"
    assert result.status == AgentRun.Status.RUNNING  # worker B finishes it, not A
    assert not Message.objects.filter(session=session, role=Message.Role.ASSISTANT).exists()
    step = AgentStep.objects.get(run=run)
    assert step.status == AgentStep.Status.DISCARDED


@pytest.mark.django_db(transaction=True)
def test_two_workers_at_once_only_one_drives(
    user: Any, scripted_model: ScriptedModel, settings: Any
) -> None:
    """Worker A is mid-call when the broker hands the same run to worker B."""
    session = services.session_create(owner=user, need_user_confirm=False)
    run = queued_run(session, user)
    inside_call, release = threading.Event(), threading.Event()

    def think(_: Any) -> None:
        inside_call.set()
        assert release.wait(30)

    scripted_model.script.extend([do(think), say("Done once.")])
    results: dict[str, AgentRun] = {}

    def worker_a() -> None:
        try:
            results["a"] = loop.execute_run(run_id=run.pk, worker="worker-a")
        finally:
            db.close_thread_connections()

    thread = threading.Thread(target=worker_a)
    thread.start()
    assert inside_call.wait(30)
    results["b"] = loop.execute_run(run_id=run.pk, worker="worker-b")
    release.set()
    thread.join(30)

    assert results["b"].lease_owner == "worker-a"  # B left it alone
    assert results["a"].status == AgentRun.Status.SUCCEEDED
    assert len(scripted_model.requests) == 1
    answers = Message.objects.filter(session=session, role=Message.Role.ASSISTANT)
    assert [m.content for m in answers] == ["Done once."]


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_renews_the_lease_during_a_long_call(
    user: Any, scripted_model: ScriptedModel, settings: Any
) -> None:
    settings.PLANBOARD_RUN_LEASE_SECONDS = 0.6  # renewed every 0.2 s
    session = services.session_create(owner=user, need_user_confirm=False)
    run = queued_run(session, user)
    seen: list[Any] = []

    def slow_call(_: Any) -> None:
        # The model "answers" until it has watched the lease being renewed three times (a
        # generous deadline only stops a broken heartbeat from hanging the test).
        deadline = time.monotonic() + 30
        while len(set(seen)) < 4 and time.monotonic() < deadline:
            seen.append(AgentRun.objects.get(pk=run.pk).lease_expires_at)
            threading.Event().wait(0.05)

    scripted_model.script.extend([do(slow_call), say("Still mine.")])
    result = loop.execute_run(run_id=run.pk, worker="worker-a")
    assert result.status == AgentRun.Status.SUCCEEDED
    assert len(set(seen)) > 3, "the lease was not renewed while the model answered"
    assert all(later >= earlier for earlier, later in itertools.pairwise(seen))


# --- the run host's statements (agents/runtime/host.py) ------------------------------------------


def test_one_statement_renews_every_lease_a_host_holds_and_names_the_lost_ones(
    session: ChatSession, user: Any
) -> None:
    others = [services.session_create(owner=user) for _ in range(2)]
    runs = [queued_run(s, user) for s in (session, *others)]
    for run in runs[:2]:
        hold_lease(run, "host-a", seconds=1)
    hold_lease(runs[2], "host-b", seconds=1)  # taken over by another host meanwhile
    before = timezone.now()
    held = services.run_renew_leases(run_ids=[r.pk for r in runs], worker="host-a")
    assert held == {runs[0].pk, runs[1].pk}
    for run in runs:
        run.refresh_from_db()
    assert all(r.lease_expires_at > before + timedelta(seconds=30) for r in runs[:2])
    assert runs[2].lease_expires_at < before + timedelta(seconds=30)  # not ours: untouched
    assert services.run_renew_leases(run_ids=[], worker="host-a") == set()


def test_a_handed_off_run_is_released_and_dispatched_again_once(
    session: ChatSession, user: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.PLANBOARD_RUN_DISPATCHER = "tests.agents.test_run_lease.remember_dispatch"
    DISPATCHED.clear()
    run = queued_run(session, user)
    hold_lease(run, "host-a", seconds=60)
    assert not services.run_hand_off(run_id=run.pk, worker="host-b")  # not its run
    with django_capture_on_commit_callbacks(execute=True):
        assert services.run_hand_off(run_id=run.pk, worker="host-a")
    dispatched = list(DISPATCHED)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.RUNNING and run.lease_owner == ""
    assert run.lease_expires_at <= timezone.now()
    assert dispatched == [run.pk]
    # Taken up again by the next worker it reaches.
    assert services.run_start(run_id=run.pk, worker="host-c").lease_owner == "host-c"


def test_the_cancel_check_names_only_the_runs_asked_to_stop(
    session: ChatSession, user: Any
) -> None:
    from planboard import selectors

    other = services.session_create(owner=user)
    first, second = queued_run(session, user), queued_run(other, user)
    for run in (first, second):
        hold_lease(run, "host-a", seconds=60)
    services.run_cancel(session_id=other.pk)
    assert selectors.runs_cancel_requested(run_ids=[first.pk, second.pk]) == [second.pk]
    assert selectors.runs_cancel_requested(run_ids=[]) == []


DISPATCHED: list[int] = []


def remember_dispatch(run_id: int, session_id: int | None = None) -> None:
    DISPATCHED.append(run_id)


def test_only_a_runs_first_start_says_it_has_no_steps_yet(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    """The driver skips reading step records back only at a run's first start: a run taken
    over (its lease expired), or handed off and started again, may have a step a dead worker
    left mid-call, and that step is marked interrupted."""
    run = queued_run(session, user)
    first = services.run_start(run_id=run.pk, worker="host-a")
    assert first.first_start
    AgentStep.objects.create(run=run, number=1, hint="(lost)")  # host-a dies mid-call
    hold_lease(run, "host-a", seconds=-1)
    taken_over = services.run_start(run_id=run.pk, worker="host-b")
    assert taken_over.lease_owner == "host-b" and not taken_over.first_start
    assert services.run_hand_off(run_id=run.pk, worker="host-b")
    again = services.run_start(run_id=run.pk, worker="host-c")
    assert again.lease_owner == "host-c" and not again.first_start
    scripted_model.script.append(say("Hi there."))
    assert loop.execute_run(run_id=run.pk, worker="host-c").status == AgentRun.Status.SUCCEEDED
    steps = AgentStep.objects.filter(run=run).order_by("number")
    assert [(s.number, s.status) for s in steps] == [
        (1, AgentStep.Status.INTERRUPTED),
        (2, AgentStep.Status.COMPLETED),
    ]
