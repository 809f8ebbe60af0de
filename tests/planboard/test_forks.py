"""Forks ("continue from here"): `services.session_fork` and the reads around it."""

from __future__ import annotations

from typing import Any

import pytest

from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import ChatSession, Plan, PlanEvent, PlanFork, SubTask
from planboard.services import Actor
from tests.support.permissions import grant
from tests.support.web import XSS, client_for, page_data


def _source_rows(plan: Plan) -> tuple[Any, ...]:
    """Everything of the source a fork must leave as it was."""
    fresh = Plan.objects.get(pk=plan.pk)
    session = ChatSession.objects.get(pk=plan.session_id)
    return (
        fresh.version,
        fresh.state,
        fresh.outcome,
        fresh.updated_at,
        list(SubTask.objects.filter(plan=plan).order_by("pk").values()),
        list(PlanEvent.objects.filter(plan=plan).order_by("version").values()),
        session.current_plan_id,
        session.updated_at,
    )


def _work(plan: Plan, actor: Actor) -> list[int]:
    """Alice starts and finishes the first subtask, starts the second, renames the third, then
    finishes the second and deletes the third: versions 2 to 7."""
    ids = list(plan.subtasks.order_by("position").values_list("pk", flat=True))
    services.subtask_set_state(plan_id=plan.pk, actor=actor, subtask_id=ids[0], state="in_progress")
    services.subtask_finish(plan_id=plan.pk, actor=actor, subtask_id=ids[0], outcome="KL 861")
    services.subtask_update(plan_id=plan.pk, actor=actor, subtask_id=ids[2], name="Temples")
    services.subtask_finish(plan_id=plan.pk, actor=actor, subtask_id=ids[1], outcome="Gion inn")
    services.subtask_delete(plan_id=plan.pk, actor=actor, subtask_id=ids[2])
    return ids


def test_fork_keeps_the_done_part_and_leaves_the_source_untouched(plan: Plan, actor: Actor) -> None:
    ids = _work(plan, actor)
    assert Plan.objects.get(pk=plan.pk).version == 6
    before = _source_rows(plan)

    # Version 4: flights done with their outcome, the hotel in progress, the third renamed.
    session, forked = services.session_fork(plan_id=plan.pk, by=actor.user, version=4)

    assert _source_rows(plan) == before
    assert session.owner == actor.user and session.current_plan_id == forked.pk
    snapshot = selectors.plan_snapshot(plan_id=forked.pk)
    at_four = selectors.plan_snapshot_at(plan_id=plan.pk, version=4)
    assert at_four is not None
    kept = ("name", "description", "expected_outcome", "outcome", "state", "index")
    assert [{k: s[k] for k in kept} for s in snapshot["subtasks"]] == [
        {k: s[k] for k in kept} for s in at_four["subtasks"]
    ]
    assert [(s["name"], s["state"], s["outcome"]) for s in snapshot["subtasks"]] == [
        ("Book flights", "done", "KL 861"),
        ("Book hotel", "in_progress", ""),
        ("Temples", "todo", ""),
    ]
    assert snapshot["subtasks"][0]["finished_at"] == at_four["subtasks"][0]["finished_at"]
    # New rows, a new history: version 1, one event saying where it came from.
    assert not set(ids) & {s["id"] for s in snapshot["subtasks"]}
    assert (snapshot["version"], snapshot["state"], snapshot["name"]) == (
        1,
        "in_progress",
        "Kyoto trip",
    )
    event = PlanEvent.objects.get(plan=forked)
    assert (event.version, event.action, event.actor_user) == (1, "plan_forked", actor.user)
    assert event.after["source"] == {
        "plan_id": plan.pk,
        "session_id": plan.session_id,
        "version": 4,
        "name": "Kyoto trip",
    }
    # The replay of the new plan's history gives its snapshot.
    replayed = selectors.plan_snapshot_at(plan_id=forked.pk, version=1)
    assert replayed is not None
    assert [s["id"] for s in replayed["subtasks"]] == [s["id"] for s in snapshot["subtasks"]]
    link = PlanFork.objects.get(session=session)
    assert (link.source_plan_id, link.source_session_id, link.source_version) == (
        plan.pk,
        plan.session_id,
        4,
    )


def test_the_source_session_settings_and_usable_toolsets_carry_over(
    plan: Plan, actor: Actor
) -> None:
    services.session_update(session_id=plan.session_id, max_subtasks=7, language="zh")
    session, _ = services.session_fork(plan_id=plan.pk, by=actor.user, version=1)
    assert (session.max_subtasks, session.language, session.title) == (7, "zh", "Trip (continued)")
    assert selectors.session_toolset_ids(session_id=session.pk) == (
        selectors.session_toolset_ids(session_id=plan.session_id)
    )


def test_a_finished_plan_continues_open(plan: Plan, actor: Actor) -> None:
    services.plan_finish(plan_id=plan.pk, actor=actor, state="abandoned", outcome="Too dear")
    version = Plan.objects.get(pk=plan.pk).version
    _, forked = services.session_fork(plan_id=plan.pk, by=actor.user, version=version)
    fresh = Plan.objects.get(pk=forked.pk)
    assert (fresh.state, fresh.outcome, fresh.finished_at) == ("todo", "", None)


def test_fork_at_a_subtask_continues_from_the_version_that_finished_it(
    plan: Plan, actor: Actor
) -> None:
    ids = _work(plan, actor)
    _, forked = services.session_fork(plan_id=plan.pk, by=actor.user, subtask_id=ids[0])
    link = PlanFork.objects.get(plan=forked)
    assert link.source_version == 3
    states = list(forked.subtasks.order_by("position").values_list("state", flat=True))
    assert states == ["done", "in_progress", "todo"]


def test_the_account_lists_the_sources_changes_with_the_new_subtask_ids(
    plan: Plan, actor: Actor
) -> None:
    ids = _work(plan, actor)
    session, forked = services.session_fork(plan_id=plan.pk, by=actor.user, version=6)
    account = selectors.fork_account(session_id=session.pk, plan_id=forked.pk)
    assert account is not None
    assert (account["source_name"], account["source_version"], account["earlier"]) == (
        "Kyoto trip",
        6,
        0,
    )
    assert [e["action"] for e in account["events"]] == [
        "plan_created",
        "subtask_state_changed",
        "subtask_finished",
        "subtask_updated",
        "subtask_finished",
        "subtask_deleted",
    ]
    new_ids = list(forked.subtasks.order_by("position").values_list("pk", flat=True))
    assert account["events"][2]["subtask_id"] == new_ids[0]
    # The deleted subtask is not on the new plan: its old id stays, its name is in the event.
    assert account["events"][5]["subtask_id"] == ids[2]
    assert account["events"][5]["before"]["name"] == "Temples"
    assert all("patch" not in e for e in account["events"])
    # Another session, or the plan of another session, has no account.
    assert selectors.fork_account(session_id=plan.session_id, plan_id=plan.pk) is None


def test_a_long_history_gives_a_short_account(plan: Plan, actor: Actor) -> None:
    first = plan.subtasks.order_by("position").first()
    assert first is not None
    for number in range(40):
        services.subtask_update(
            plan_id=plan.pk, actor=actor, subtask_id=first.pk, description="x" * 500 + str(number)
        )
    session, forked = services.session_fork(plan_id=plan.pk, by=actor.user, version=41)
    account = selectors.fork_account(session_id=session.pk, plan_id=forked.pk)
    assert account is not None
    assert (len(account["events"]), account["earlier"]) == (30, 11)
    assert account["events"][-1]["version"] == 41
    assert all(len(e["after"]["description"]) <= 200 for e in account["events"])


@pytest.mark.parametrize(
    ("point", "message"),
    [
        ({"version": 0}, "has versions 1 to 1; there is no version 0"),
        ({"version": 2}, "there is no version 2"),
        ({"version": "1"}, "'version' must be a whole number"),
        ({"version": True}, "'version' must be a whole number"),
        ({}, "Give either 'version' or 'subtask_id'"),
        ({"version": 1, "subtask_id": 1}, "Give either 'version' or 'subtask_id'"),
    ],
)
def test_bad_fork_points_are_refused_and_nothing_is_written(
    plan: Plan, actor: Actor, point: dict[str, Any], message: str
) -> None:
    sessions = ChatSession.objects.count()
    with pytest.raises(PlanError, match=message):
        services.session_fork(plan_id=plan.pk, by=actor.user, **point)
    assert ChatSession.objects.count() == sessions
    assert not PlanFork.objects.exists()


def test_a_subtask_of_another_plan_or_one_never_finished_is_refused(
    plan: Plan, actor: Actor, user: Any
) -> None:
    other = services.session_create(owner=user)
    elsewhere, _ = services.plan_create(
        session_id=other.pk, actor=actor, name="Other", subtasks=[{"name": "Elsewhere"}]
    )
    foreign = elsewhere.subtasks.get()
    with pytest.raises(PlanError, match=f"Subtask {foreign.pk} is not part of plan {plan.pk}"):
        services.session_fork(plan_id=plan.pk, by=user, subtask_id=foreign.pk)
    mine = plan.subtasks.order_by("position").first()
    assert mine is not None
    with pytest.raises(PlanError, match="was never finished"):
        services.session_fork(plan_id=plan.pk, by=user, subtask_id=mine.pk)
    assert not PlanFork.objects.exists()


def test_only_those_who_may_read_the_history_may_fork(
    plan: Plan, other_user: Any, lead: Any, staff: Any
) -> None:
    for outsider in (other_user, staff):
        with pytest.raises(PlanError, match=f"Plan {plan.pk} does not exist"):
            services.session_fork(plan_id=plan.pk, by=outsider, version=1)
    # A team lead reads the member's history, so may continue it in a session of their own.
    session, _ = services.session_fork(plan_id=plan.pk, by=lead, version=1)
    assert session.owner == lead
    # Staff with the plan's view permission read every history.
    viewer = grant(staff, "planboard.view_plan")
    session, _ = services.session_fork(plan_id=plan.pk, by=viewer, version=1)
    assert session.owner == viewer


def test_an_inactive_person_cannot_fork(plan: Plan, user: Any) -> None:
    user.is_active = False
    user.save()
    with pytest.raises(PlanError, match="does not exist"):
        services.session_fork(plan_id=plan.pk, by=user, version=1)


def test_a_missing_part_of_the_history_is_a_clear_error(plan: Plan, actor: Actor) -> None:
    first = plan.subtasks.order_by("position").first()
    assert first is not None
    services.subtask_update(plan_id=plan.pk, actor=actor, subtask_id=first.pk, name="A")
    services.subtask_update(plan_id=plan.pk, actor=actor, subtask_id=first.pk, name="B")
    PlanEvent.objects.filter(plan=plan, version=2).delete()
    with pytest.raises(PlanError, match="history is missing"):
        services.session_fork(plan_id=plan.pk, by=actor.user, version=3)


def test_continuations_are_listed_on_the_source_for_those_who_see_them(
    plan: Plan, actor: Actor, lead: Any, other_user: Any
) -> None:
    mine, _ = services.session_fork(plan_id=plan.pk, by=actor.user, version=1)
    leads, _ = services.session_fork(plan_id=plan.pk, by=lead, version=1)
    seen_by_alice = selectors.plan_continuations(plan_id=plan.pk, user=actor.user)
    assert [c["session_id"] for c in seen_by_alice] == [mine.pk]
    seen_by_lead = selectors.plan_continuations(plan_id=plan.pk, user=lead)
    assert {c["session_id"] for c in seen_by_lead} == {mine.pk, leads.pk}
    assert selectors.plan_continuations(plan_id=plan.pk, user=other_user) == []
    # The new plan says where it came from; the source only to those who may read it.
    forked_plan = ChatSession.objects.get(pk=leads.pk).current_plan_id
    assert forked_plan is not None
    origin = selectors.fork_origin(plan_id=forked_plan, user=lead)
    assert origin is not None and origin["source_plan_id"] == plan.pk
    hidden = selectors.fork_origin(plan_id=forked_plan, user=other_user)
    assert hidden is not None and hidden["source_plan_id"] is None
    assert hidden["source_version"] == 1


def test_deleting_the_source_keeps_the_fork(plan: Plan, actor: Actor) -> None:
    session, forked = services.session_fork(plan_id=plan.pk, by=actor.user, version=1)
    ChatSession.objects.filter(pk=plan.session_id).delete()
    Plan.objects.filter(pk=plan.pk).delete()
    link = PlanFork.objects.get(session=session)
    assert (link.source_plan_id, link.source_session_id, link.source_name) == (
        None,
        None,
        "Kyoto trip",
    )
    assert selectors.fork_account(session_id=session.pk, plan_id=forked.pk) is not None


# --- the history pages ------------------------------------------------------------------------


def test_the_history_pages_say_where_a_plan_came_from_and_where_it_went(
    plan: Plan, actor: Actor, lead: Any
) -> None:
    session, forked = services.session_fork(plan_id=plan.pk, by=actor.user, version=1)
    services.session_update(session_id=session.pk, title=XSS)
    leads, _ = services.session_fork(plan_id=plan.pk, by=lead, version=1)

    source_page = client_for(actor.user).get(f"/history/plans/{plan.pk}/")
    assert source_page.status_code == 200
    assert "csrftoken" in source_page.cookies  # the button posts to the REST API
    assert page_data(source_page)["fork_url"] == f"/api/plans/{plan.pk}/fork/"
    html = source_page.content.decode()
    assert 'id="fork-here"' in html
    assert f'href="/sessions/{session.pk}/"' in html
    assert XSS not in html and "&lt;script&gt;" in html
    # The lead's continuation is not alice's to see.
    assert f'href="/sessions/{leads.pk}/"' not in html

    forked_page = client_for(actor.user).get(f"/history/plans/{forked.pk}/")
    html = forked_page.content.decode()
    assert "Continued from" in html and f'href="/history/plans/{plan.pk}/"' in html
    events = page_data(forked_page)["events"]
    assert [e["action"] for e in events] == ["plan_forked"]
    # The source's page is unchanged by being continued: same version, same history.
    assert page_data(source_page)["plan"]["version"] == 1
