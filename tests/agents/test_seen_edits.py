"""People's edits the agent has seen: each change people make records when an agent first
received it in a hint, and how many model calls finished without seeing it."""

from __future__ import annotations

from typing import Any

import pytest

from agents import loop
from planboard import broadcast, selectors, services
from planboard.models import ChatSession, PlanEvent
from planboard.services import Actor
from tests.support.scripted import ScriptedModel, call, do, say, tool_calls
from tests.support.web import api_client_for


@pytest.fixture
def seen_events() -> Any:
    seen: list[dict[str, Any]] = []
    unsubscribe = broadcast.subscribe(
        lambda group, event: (
            seen.append(event)
            if event["type"] == "plan.seen" and group.startswith("plan.")
            else None
        )
    )
    yield seen
    unsubscribe()


def plan_call() -> dict[str, Any]:
    return call(
        "create_plan",
        name="Trip",
        description="A short trip",
        expected_outcome="Everything booked",
        subtasks=[{"name": "Book"}, {"name": "Pack"}],
    )


def event(plan_id: int, version: int) -> PlanEvent:
    return PlanEvent.objects.get(plan_id=plan_id, version=version)


@pytest.mark.django_db(transaction=True)  # `plan.seen` leaves on commit
def test_an_edit_between_two_runs_is_pending_until_the_next_hint(
    user: Any, scripted_model: ScriptedModel, seen_events: list[dict[str, Any]]
) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    scripted_model.script.extend([tool_calls(plan_call()), say("Planned.")])
    _, run = services.message_post(session_id=session.pk, author=user, content="Plan a trip")
    loop.execute_run(run_id=run.pk)
    session.refresh_from_db()
    plan_id = session.current_plan_id
    assert plan_id is not None

    # A person adds a subtask while no agent runs: pending.
    services.subtask_add(plan_id=plan_id, actor=Actor.person(user), name="Buy a guidebook")
    added = selectors.plan_snapshot(plan_id=plan_id)["version"]
    assert selectors.plan_unseen_edits(plan_id=plan_id) == [
        {
            "version": added,
            "subtask_id": event(plan_id, added).subtask_id,
            "action": "subtask_added",
        }
    ]
    assert selectors.session_snapshot(session_id=session.pk)["unseen_edits"][0]["version"] == added

    scripted_model.script.append(say("I see the guidebook."))
    _, second = services.message_post(session_id=session.pk, author=user, content="Go on")
    loop.execute_run(run_id=second.pk)

    edit = event(plan_id, added)
    assert edit.seen_at is not None and edit.seen_in_run_id == second.pk
    assert (edit.seen_at_step, edit.seen_after_steps) == (1, 0)
    assert selectors.plan_unseen_edits(plan_id=plan_id) == []
    assert any(s["version"] == added for e in seen_events for s in e["seen"])
    # The agent's own changes never wait to be seen.
    assert event(plan_id, 1).seen_at is None
    assert all(
        e["seen"] is None
        for e in selectors.plan_events_since(plan_id=plan_id, version=0)
        if e["actor"]["kind"] == "agent"
    )


def test_an_edit_made_while_the_model_answers_waits_one_step(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    person = Actor.person(user)

    def edit_now(_: Any) -> None:
        plan_id = ChatSession.objects.get(pk=session.pk).current_plan_id
        services.subtask_add(plan_id=plan_id, actor=person, name="Edited mid-call", index=0)

    scripted_model.script.extend(
        [
            tool_calls(plan_call()),
            do(edit_now),  # during the second model call, which was shown the older plan
            tool_calls(call("get_subtask_count")),
            say("Noted the new first subtask."),
        ]
    )
    _, run = services.message_post(session_id=session.pk, author=user, content="Plan a trip")
    loop.execute_run(run_id=run.pk)
    session.refresh_from_db()
    edit = PlanEvent.objects.get(plan_id=session.current_plan_id, action="subtask_added")
    assert (edit.seen_at_step, edit.seen_after_steps) == (3, 1)
    assert "Edited mid-call" in scripted_model.hint(2)


def test_the_rest_history_carries_when_the_agent_saw_each_edit(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    scripted_model.script.extend([tool_calls(plan_call()), say("Planned.")])
    _, run = services.message_post(session_id=session.pk, author=user, content="Plan a trip")
    loop.execute_run(run_id=run.pk)
    session.refresh_from_db()
    plan_id = session.current_plan_id
    services.plan_update_info(plan_id=plan_id, actor=Actor.person(user), name="Better trip")
    client = api_client_for(user)
    history = client.get(f"/api/plans/{plan_id}/events/").json()
    rows = history["results"] if isinstance(history, dict) else history
    edit = next(r for r in rows if r["action"] == "plan_updated")
    assert edit["seen"] is None  # pending

    scripted_model.script.append(say("Renamed, noted."))
    _, second = services.message_post(session_id=session.pk, author=user, content="ok")
    loop.execute_run(run_id=second.pk)
    history = client.get(f"/api/plans/{plan_id}/events/").json()
    rows = history["results"] if isinstance(history, dict) else history
    edit = next(r for r in rows if r["action"] == "plan_updated")
    assert edit["seen"]["run_id"] == second.pk and edit["seen"]["after_steps"] == 0
