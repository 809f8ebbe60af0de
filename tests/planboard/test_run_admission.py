"""Per-user admission: a user's runs beyond PLANBOARD_USER_RUNS_IN_FLIGHT wait, queued in
creation order and not dispatched, with their place shown (`queue_position`); when one of the
user's runs stops the next one goes. Other users are not held up by it."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from agents import loop, sweeper
from planboard import broadcast, selectors, services
from planboard.models import AgentRun, ChatSession
from tests.conftest import EventRecorder
from tests.support import db
from tests.support.env import DISPATCHED
from tests.support.scripted import ScriptedModel, say


@pytest.fixture(autouse=True)
def _cap_of_two(settings: Any) -> None:
    settings.PLANBOARD_USER_RUNS_IN_FLIGHT = 2


def post(user: Any, session: ChatSession, text: str = "Hello") -> AgentRun:
    _, run = services.message_post(session_id=session.pk, author=user, content=text)
    return run


def positions(runs: list[AgentRun]) -> list[int | None]:
    fresh = [AgentRun.objects.get(pk=r.pk) for r in runs]
    return [selectors.run_queue_position(run=r) for r in fresh]


def new_sessions(user: Any, count: int) -> list[ChatSession]:
    return [services.session_create(owner=user, need_user_confirm=False) for _ in range(count)]


def test_runs_beyond_the_cap_wait_in_order_and_are_not_dispatched(
    user: Any, other_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    DISPATCHED.clear()
    with django_capture_on_commit_callbacks(execute=True):
        runs = [post(user, s) for s in new_sessions(user, 4)]
        theirs = post(other_user, new_sessions(other_user, 1)[0])
    assert DISPATCHED == [runs[0].pk, runs[1].pk, theirs.pk]
    assert positions(runs) == [None, None, 1, 2]
    assert positions([theirs]) == [None]
    assert all(AgentRun.objects.get(pk=r.pk).status == "queued" for r in runs)
    assert selectors.runs_in_flight(user_id=user.pk) == 2


def test_when_a_run_stops_the_next_waiting_one_goes_and_the_rest_move_up(
    user: Any,
    scripted_model: ScriptedModel,
    events: EventRecorder,
    django_capture_on_commit_callbacks: Any,
) -> None:
    sessions = new_sessions(user, 5)
    with django_capture_on_commit_callbacks(execute=True):
        runs = [post(user, s) for s in sessions]
    assert positions(runs) == [None, None, 1, 2, 3]
    DISPATCHED.clear()
    events.items.clear()
    scripted_model.script.append(say("First done."))
    with django_capture_on_commit_callbacks(execute=True):
        assert loop.execute_run(run_id=runs[0].pk).status == AgentRun.Status.SUCCEEDED
    assert DISPATCHED == [runs[2].pk]
    assert positions(runs) == [None, None, None, 1, 2]
    # Every session whose run moved heard its new place.
    shown = {
        e["run"]["id"]: e["run"]["queue_position"]
        for g, e in events.items
        if e.get("type") == "session.run"
    }
    assert shown[runs[2].pk] is None and shown[runs[3].pk] == 1 and shown[runs[4].pk] == 2
    to_fourth = {
        group
        for group, event in events.items
        if event.get("type") == "session.run" and event["run"]["id"] == runs[3].pk
    }
    assert to_fourth == {broadcast.session_group(sessions[3].pk)}


def test_cancelling_a_waiting_run_moves_the_others_up_without_dispatching(
    user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sessions = new_sessions(user, 5)
    with django_capture_on_commit_callbacks(execute=True):
        runs = [post(user, s) for s in sessions]
    DISPATCHED.clear()
    with django_capture_on_commit_callbacks(execute=True):
        cancelled = services.run_cancel(session_id=sessions[2].pk)
    assert cancelled is not None and cancelled.status == AgentRun.Status.CANCELLED
    assert DISPATCHED == []
    assert positions(runs) == [None, None, None, 1, 2]


def test_pausing_for_the_user_frees_a_place_and_the_answer_queues_again(
    user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sessions = new_sessions(user, 3)
    with django_capture_on_commit_callbacks(execute=True):
        runs = [post(user, s) for s in sessions]
    services.run_start(run_id=runs[0].pk, worker="w")
    DISPATCHED.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.run_finish(run_id=runs[0].pk, status=AgentRun.Status.WAITING_FOR_USER)
    assert DISPATCHED == [runs[2].pk]
    # The user answers: the same run is queued again, behind nobody, but the cap is full.
    with django_capture_on_commit_callbacks(execute=True):
        again = post(user, sessions[0], "Go ahead")
    assert again.pk == runs[0].pk
    assert DISPATCHED == [runs[2].pk]
    assert positions([again]) == [1]


def test_a_stale_message_for_a_waiting_run_does_not_start_it(
    user: Any, scripted_model: ScriptedModel, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        runs = [post(user, s) for s in new_sessions(user, 3)]
    run = loop.execute_run(run_id=runs[2].pk, worker="w")
    assert run.status == AgentRun.Status.QUEUED and run.lease_owner == ""
    assert scripted_model.requests == []
    assert positions([run]) == [1]
    # Once there is room (and it is first in line) the same message may start it.
    AgentRun.objects.filter(pk=runs[0].pk).update(status=AgentRun.Status.SUCCEEDED)
    scripted_model.script.append(say("Now."))
    assert loop.execute_run(run_id=runs[2].pk).status == AgentRun.Status.SUCCEEDED


def test_the_sweep_admits_waiting_runs_whose_owner_has_room(
    user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """If the admission after a stop was lost (the process died right after its commit),
    the next sweep lets the waiting runs in."""
    with django_capture_on_commit_callbacks(execute=True):
        runs = [post(user, s) for s in new_sessions(user, 3)]
    AgentRun.objects.filter(pk=runs[0].pk).update(
        status=AgentRun.Status.FAILED, lease_expires_at=None
    )
    DISPATCHED.clear()
    with django_capture_on_commit_callbacks(execute=True):
        result = sweeper.sweep_once()
    assert result.admitted == [runs[2].pk] and DISPATCHED == [runs[2].pk]
    with django_capture_on_commit_callbacks(execute=True):
        assert sweeper.sweep_once().admitted == []


def test_a_cap_of_zero_means_no_limit(
    user: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.PLANBOARD_USER_RUNS_IN_FLIGHT = 0
    DISPATCHED.clear()
    with django_capture_on_commit_callbacks(execute=True):
        runs = [post(user, s) for s in new_sessions(user, 5)]
    assert DISPATCHED == [r.pk for r in runs]
    assert positions(runs) == [None] * 5


def test_one_session_still_has_one_run_whatever_the_queue(
    user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sessions = new_sessions(user, 3)
    with django_capture_on_commit_callbacks(execute=True):
        runs = [post(user, s) for s in sessions]
        again = post(user, sessions[2], "Another thing")  # the waiting run reads it
    assert again.pk == runs[2].pk
    assert AgentRun.objects.filter(session=sessions[2]).count() == 1


def test_rest_and_the_session_snapshot_show_the_place_to_the_owner_only(
    user: Any, other_user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    sessions = new_sessions(user, 3)
    client = Client()
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        for session in sessions:
            response = client.post(
                f"/api/sessions/{session.pk}/messages/",
                {"content": "Plan a trip"},
                content_type="application/json",
            )
            assert response.status_code == 202, response.content
    assert response.json()["run"]["queue_position"] == 1
    snapshot = client.get(f"/api/sessions/{sessions[2].pk}/").json()
    assert snapshot["latest_run"]["queue_position"] == 1
    assert (
        client.get(f"/api/sessions/{sessions[0].pk}/").json()["latest_run"]["queue_position"]
        is None
    )
    listed = {
        row["id"]: row["latest_run"] for row in client.get("/api/sessions/").json()["results"]
    }
    assert listed[sessions[2].pk]["queue_position"] == 1
    # Someone else neither sees the session nor can post into its queue.
    stranger = Client()
    stranger.force_login(other_user)
    assert stranger.get(f"/api/sessions/{sessions[2].pk}/").status_code in (403, 404)
    response = stranger.post(
        f"/api/sessions/{sessions[2].pk}/messages/",
        {"content": "me too"},
        content_type="application/json",
    )
    assert response.status_code in (403, 404)
    assert AgentRun.objects.filter(session__owner=other_user).count() == 0


@pytest.mark.postgres
def test_two_posts_at_once_cannot_both_take_the_last_place(postgres: None, settings: Any) -> None:
    """The admission decides under a lock on the user's row: of two messages posted at the
    same moment into two sessions with one place left, one run goes and one waits."""
    settings.PLANBOARD_USER_RUNS_IN_FLIGHT = 1
    user = get_user_model().objects.create_user("racer", password="pw-racer-123")
    sessions = new_sessions(user, 2)
    DISPATCHED.clear()
    start = threading.Barrier(2)
    made: list[AgentRun] = []

    def write(session: ChatSession) -> None:
        try:
            start.wait(30)
            made.append(post(user, session))
        finally:
            db.close_thread_connections()

    threads = [threading.Thread(target=write, args=(s,)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(made) == 2 and len(DISPATCHED) == 1
    assert sorted(p or 0 for p in positions(made)) == [0, 1]


def test_a_new_run_is_admitted_before_its_insert_in_one_read(user: Any) -> None:
    """Posting decides admission under the owner's lock with one query, then inserts the run
    with its dispatch deadline set (or none: waiting): no update stamps it afterwards."""
    first, second, third = new_sessions(user, 3)
    post(user, first), post(user, second)
    with db.statements() as posting:
        waiting = post(user, third)
    assert waiting.lease_expires_at is None and positions([waiting]) == [1]
    assert not any(s.lstrip().startswith('UPDATE "planboard_agentrun"') for s in posting)
    other = get_user_model().objects.create_user("x")
    with db.statements() as posting:
        admitted = post(other, new_sessions(other, 1)[0])
    assert admitted.lease_expires_at is not None and positions([admitted]) == [None]
    assert not any(s.lstrip().startswith('UPDATE "planboard_agentrun"') for s in posting)
    # The owner's runs waiting ahead and in flight, read together (by the owner: a join).
    owners_runs = [s for s in posting if "FROM planboard_agentrun r\nJOIN" in s]
    assert len(owners_runs) == 1 and "COUNT(" not in owners_runs[0].upper()


@pytest.mark.postgres
def test_runs_posted_started_and_finished_at_once_never_deadlock_or_strand(
    postgres: None, settings: Any
) -> None:
    """Posting (session, user), starting (the run; a waiting one: user, run) and finishing
    (session, user, run, then the owner's waiting runs in the same transaction) take their
    locks in one order: threads doing all three at once for one user never deadlock, never
    put more runs in flight than the cap, and leave no run waiting once none is in flight."""
    settings.PLANBOARD_USER_RUNS_IN_FLIGHT = 2
    user = get_user_model().objects.create_user("busy", password="pw-busy-123")
    sessions = new_sessions(user, 4)
    failures: list[BaseException] = []
    most_in_flight = [0]

    def lifecycle(session: ChatSession, worker: str) -> None:
        try:
            for _ in range(6):
                run = post(user, session)
                started = services.run_start(run_id=run.pk, worker=worker)
                in_flight = selectors.runs_in_flight(user_id=user.pk)
                most_in_flight[0] = max(most_in_flight[0], in_flight)
                if started.status == AgentRun.Status.RUNNING:
                    services.run_finish(
                        run_id=run.pk,
                        session_id=session.pk,
                        status=AgentRun.Status.SUCCEEDED,
                        unless_user_message_after=10**9,
                    )
                else:  # waiting for admission: stopped before it ever ran
                    services.run_cancel(session_id=session.pk)
        except BaseException as exc:
            failures.append(exc)
        finally:
            db.close_thread_connections()

    threads = [
        threading.Thread(target=lifecycle, args=(s, f"w{n}")) for n, s in enumerate(sessions)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not [t for t in threads if t.is_alive()], "a thread hung (a deadlock)"
    assert not failures, failures
    assert most_in_flight[0] <= 2
    assert selectors.runs_in_flight(user_id=user.pk) == 0
    assert not AgentRun.objects.filter(session__owner=user, status=AgentRun.Status.QUEUED).exists()
