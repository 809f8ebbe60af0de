"""An index in a tool call means the subtask the model was shown there, not whatever sits at
that position when the call runs: a person may move, insert or delete cards between the hint
and the call."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from agents import loop, tools
from agents.models import AgentStep
from agents.plan_view import ShownPlan
from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Plan
from planboard.services import Actor
from tests.support import db
from tests.support.scripted import ScriptedModel, call, do, say, tool_calls


def snapshot(plan: Plan) -> dict[str, Any]:
    return selectors.plan_snapshot(plan_id=plan.pk)


def by_name(plan: Plan) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in snapshot(plan)["subtasks"]}


def order(plan: Plan) -> list[str]:
    return [s["name"] for s in snapshot(plan)["subtasks"]]


@pytest.fixture
def started(plan: Plan, agent: Actor) -> Plan:
    """Kyoto plan: 'Book flights' (in progress), 'Book hotel', 'Plan days'."""
    first = snapshot(plan)["subtasks"][0]["id"]
    services.subtask_set_state(plan_id=plan.pk, actor=agent, subtask_id=first, state="in_progress")
    return plan


# --- what a person does between the hint and the call ------------------------------------------


def _id(plan: Plan, name: str) -> int:
    return int(by_name(plan)[name]["id"])


def move_flights_down(plan: Plan, person: Actor) -> None:
    services.subtask_move(
        plan_id=plan.pk, actor=person, subtask_id=_id(plan, "Book flights"), index=1
    )


def move_hotel_up(plan: Plan, person: Actor) -> None:
    services.subtask_move(
        plan_id=plan.pk, actor=person, subtask_id=_id(plan, "Book hotel"), index=0
    )


def insert_at_top(plan: Plan, person: Actor) -> None:
    services.subtask_add(plan_id=plan.pk, actor=person, index=0, name="Get visa")


def delete_flights(plan: Plan, person: Actor) -> None:
    services.subtask_delete(plan_id=plan.pk, actor=person, subtask_id=_id(plan, "Book flights"))


def delete_hotel(plan: Plan, person: Actor) -> None:
    services.subtask_delete(plan_id=plan.pk, actor=person, subtask_id=_id(plan, "Book hotel"))


def edit_hotel(plan: Plan, person: Actor) -> None:
    services.subtask_update(
        plan_id=plan.pk, actor=person, subtask_id=_id(plan, "Book hotel"), description="Ryokan"
    )


def abandon_flights(plan: Plan, person: Actor) -> None:
    services.subtask_set_state(
        plan_id=plan.pk, actor=person, subtask_id=_id(plan, "Book flights"), state="abandoned"
    )


Edit = Callable[[Plan, Actor], None]


def run_tool(
    chat_session: ChatSession,
    agent: Actor,
    plan: Plan,
    person: Actor,
    edit: Edit,
    name: str,
    arguments: dict[str, Any],
) -> str:
    """The model is shown the plan, a person edits it, then the model's call runs."""
    shown = ShownPlan.of(snapshot(plan))
    edit(plan, person)
    return tools.execute_tool_call(
        session_id=chat_session.pk, actor=agent, name=name, arguments=arguments, shown=shown
    )


def refused(
    chat_session: ChatSession,
    agent: Actor,
    plan: Plan,
    person: Actor,
    edit: Edit,
    name: str,
    arguments: dict[str, Any],
) -> tuple[str, ShownPlan, dict[str, Any]]:
    """Like `run_tool` for a call that must be refused: checks that it is an `Error:` and
    that it changed nothing; returns the result, the model's view and the plan."""
    shown = ShownPlan.of(snapshot(plan))
    edit(plan, person)
    before = snapshot(plan)
    result = tools.execute_tool_call(
        session_id=chat_session.pk, actor=agent, name=name, arguments=arguments, shown=shown
    )
    assert result.startswith("Error: "), result
    assert snapshot(plan) == before
    return result, shown, before


# --- finish_subtask ---------------------------------------------------------------------------

FINISH_FLIGHTS = {"subtask_idx": 0, "subtask_outcome": "Tickets for the 3rd"}
FINISH_HOTEL = {"subtask_idx": 1, "subtask_outcome": "Ryokan booked"}


@pytest.fixture
def halfway(started: Plan, agent: Actor) -> Plan:
    """'Book flights' done, 'Book hotel' in progress, 'Plan days' todo."""
    services.subtask_finish(
        plan_id=started.pk, actor=agent, subtask_id=_id(started, "Book flights"), outcome="Tickets"
    )
    return started


def move_flights_to_the_end(plan: Plan, person: Actor) -> None:
    services.subtask_move(
        plan_id=plan.pk, actor=person, subtask_id=_id(plan, "Book flights"), index=2
    )


def test_finish_acts_on_the_subtask_shown_after_a_move(
    chat_session: ChatSession, halfway: Plan, agent: Actor, actor: Actor
) -> None:
    result = run_tool(
        chat_session, agent, halfway, actor, move_flights_to_the_end, "finish_subtask", FINISH_HOTEL
    )
    subtasks = by_name(halfway)
    assert subtasks["Book hotel"]["state"] == "done", result
    assert subtasks["Book hotel"]["outcome"] == "Ryokan booked"
    assert subtasks["Plan days"]["outcome"] == ""
    assert subtasks["Book flights"]["outcome"] == "Tickets"
    # The model is told where the subtask is now.
    assert "you saw it at index 1; the plan changed since, so it is at index 0 now" in result


@pytest.mark.parametrize("edit", [insert_at_top, move_flights_down], ids=["insert", "move"])
def test_finish_names_the_subtask_shown_when_a_rule_refuses(
    chat_session: ChatSession, started: Plan, agent: Actor, actor: Actor, edit: Edit
) -> None:
    """A todo card put before the subtask in progress blocks finishing it; the refusal is about
    the subtask the model meant, and the card now in its old place is left alone."""
    result, _, _ = refused(
        chat_session, agent, started, actor, edit, "finish_subtask", FINISH_FLIGHTS
    )
    assert result.startswith("Error: Cannot finish subtask 1 ('Book flights')"), result


@pytest.mark.parametrize(
    ("edit", "reason"),
    [(delete_flights, "has been deleted since"), (abandon_flights, "in_progress to abandoned")],
    ids=["delete", "state"],
)
def test_finish_refuses_when_the_shown_subtask_is_gone_or_changed(
    chat_session: ChatSession, started: Plan, agent: Actor, actor: Actor, edit: Edit, reason: str
) -> None:
    result, shown, before = refused(
        chat_session, agent, started, actor, edit, "finish_subtask", FINISH_FLIGHTS
    )
    assert reason in result
    assert "Nothing was changed. The plan is now:" in result
    assert "Look at it again" in result
    # The refusal printed the plan, so the model's view is the current plan now.
    assert shown == ShownPlan.of(before)


# --- update_subtask_state ---------------------------------------------------------------------


@pytest.mark.parametrize("edit", [move_hotel_up, insert_at_top], ids=["move", "insert"])
def test_state_change_acts_on_the_subtask_shown(
    chat_session: ChatSession, started: Plan, agent: Actor, actor: Actor, edit: Edit
) -> None:
    arguments = {"subtask_idx": 1, "state": "abandoned"}
    result = run_tool(chat_session, agent, started, actor, edit, "update_subtask_state", arguments)
    states = {name: s["state"] for name, s in by_name(started).items()}
    assert states["Book hotel"] == "abandoned", result
    assert states["Book flights"] == "in_progress"
    assert [s for n, s in states.items() if n not in ("Book hotel", "Book flights")] == ["todo"] * (
        len(states) - 2
    )


def test_state_change_refuses_a_deleted_subtask(
    chat_session: ChatSession, started: Plan, agent: Actor, actor: Actor
) -> None:
    arguments = {"subtask_idx": 1, "state": "abandoned"}
    result = run_tool(
        chat_session, agent, started, actor, delete_hotel, "update_subtask_state", arguments
    )
    assert result.startswith("Error: subtask 1 ('Book hotel') that you were shown has been deleted")
    assert [s["state"] for s in snapshot(started)["subtasks"]] == ["in_progress", "todo"]


# --- revise_current_plan: revise, delete, add -------------------------------------------------

REVISE_HOTEL = {"subtask_idx": 1, "action": "revise", "subtask": {"name": "Book ryokan"}}
DELETE_HOTEL = {"subtask_idx": 1, "action": "delete"}


@pytest.mark.parametrize("edit", [move_hotel_up, insert_at_top], ids=["move", "insert"])
def test_revise_acts_on_the_subtask_shown(
    chat_session: ChatSession, started: Plan, agent: Actor, actor: Actor, edit: Edit
) -> None:
    result = run_tool(
        chat_session, agent, started, actor, edit, "revise_current_plan", REVISE_HOTEL
    )
    names = order(started)
    assert "Book ryokan" in names and "Book hotel" not in names, result
    assert "Book flights" in names and "Plan days" in names


@pytest.mark.parametrize(
    ("edit", "reason"),
    [(delete_hotel, "has been deleted since"), (edit_hotel, "(its text)")],
    ids=["delete", "text"],
)
@pytest.mark.parametrize("arguments", [REVISE_HOTEL, DELETE_HOTEL], ids=["revise", "delete"])
def test_revise_and_delete_refuse_after_a_persons_delete_or_edit(
    chat_session: ChatSession,
    started: Plan,
    agent: Actor,
    actor: Actor,
    edit: Edit,
    reason: str,
    arguments: dict[str, Any],
) -> None:
    result, _, _ = refused(
        chat_session, agent, started, actor, edit, "revise_current_plan", arguments
    )
    assert reason in result


@pytest.mark.parametrize("edit", [move_hotel_up, insert_at_top], ids=["move", "insert"])
def test_delete_removes_the_subtask_shown_and_nothing_else(
    chat_session: ChatSession, started: Plan, agent: Actor, actor: Actor, edit: Edit
) -> None:
    result = run_tool(
        chat_session, agent, started, actor, edit, "revise_current_plan", DELETE_HOTEL
    )
    assert not result.startswith("Error: "), result
    assert "Book hotel" not in order(started)
    assert {"Book flights", "Plan days"} <= set(order(started))
    assert len(order(started)) == (3 if edit is insert_at_top else 2)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (move_hotel_up, ["Check rail pass", "Book hotel", "Book flights", "Plan days"]),
        (insert_at_top, ["Get visa", "Book flights", "Check rail pass", "Book hotel", "Plan days"]),
    ],
    ids=["move", "insert"],
)
def test_add_inserts_before_the_subtask_shown_at_the_index(
    chat_session: ChatSession,
    started: Plan,
    agent: Actor,
    actor: Actor,
    edit: Edit,
    expected: list[str],
) -> None:
    arguments = {"subtask_idx": 1, "action": "add", "subtask": {"name": "Check rail pass"}}
    result = run_tool(chat_session, agent, started, actor, edit, "revise_current_plan", arguments)
    assert order(started) == expected, result
    if expected.index("Check rail pass") != 1:
        assert "the plan changed since you saw it, so it went in before 'Book hotel'" in result


def test_add_at_the_end_goes_after_the_last_subtask_shown(
    chat_session: ChatSession, started: Plan, agent: Actor, actor: Actor
) -> None:
    def append_and_move(plan: Plan, person: Actor) -> None:
        services.subtask_add(plan_id=plan.pk, actor=person, index=3, name="Souvenirs")

    arguments = {"subtask_idx": 3, "action": "add", "subtask": {"name": "Pack"}}
    result = run_tool(
        chat_session, agent, started, actor, append_and_move, "revise_current_plan", arguments
    )
    assert order(started) == ["Book flights", "Book hotel", "Plan days", "Pack", "Souvenirs"]
    assert result.startswith("Added subtask 3 ('Pack'):"), result


def test_add_refuses_when_the_anchor_was_deleted(
    chat_session: ChatSession, started: Plan, agent: Actor, actor: Actor
) -> None:
    arguments = {"subtask_idx": 1, "action": "add", "subtask": {"name": "Check rail pass"}}
    result = run_tool(
        chat_session, agent, started, actor, delete_hotel, "revise_current_plan", arguments
    )
    assert result.startswith("Error: subtask 1 ('Book hotel') that you were shown"), result
    assert order(started) == ["Book flights", "Plan days"]


# --- view_subtasks ----------------------------------------------------------------------------


def test_view_shows_the_subtask_shown_and_says_where_it_went(
    chat_session: ChatSession, started: Plan, agent: Actor, actor: Actor
) -> None:
    result = run_tool(
        chat_session, agent, started, actor, insert_at_top, "view_subtasks", {"subtask_idx": [1]}
    )
    assert "Book hotel" in result and "Get visa" not in result
    assert "it is at 2 now" in result
    # Now shown: visa, flights, hotel, days; the hotel goes before the next call.
    gone = run_tool(
        chat_session, agent, started, actor, delete_hotel, "view_subtasks", {"subtask_idx": [2]}
    )
    assert "'Book hotel' that you were shown there has been deleted since" in gone


def test_a_different_current_plan_is_refused(
    chat_session: ChatSession, started: Plan, agent: Actor, actor: Actor
) -> None:
    shown = ShownPlan.of(snapshot(started))
    services.plan_create(
        session_id=chat_session.pk, actor=actor, name="Osaka", subtasks=[{"name": "Eat"}]
    )
    result = tools.execute_tool_call(
        session_id=chat_session.pk,
        actor=agent,
        name="finish_subtask",
        arguments=FINISH_FLIGHTS,
        shown=shown,
    )
    assert result.startswith("Error: the current plan is plan "), result
    assert "('Osaka'), not the plan you were shown" in result


# --- through the loop: the view follows the model's own calls and survives a crash -------------


def kyoto_plan_call() -> dict[str, Any]:
    return call(
        "create_plan",
        name="Kyoto trip",
        description="Three days",
        expected_outcome="An itinerary",
        subtasks=[{"name": n} for n in ("Book flights", "Book hotel", "Plan days")],
    )


def test_calls_of_one_answer_see_each_others_effects(
    chat_session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    """Delete 1 then abandon 1: the second index means the subtask the model's own delete
    moved up to 1 (the view follows the model's calls, not only the hint)."""
    services.session_update(session_id=chat_session.pk, need_user_confirm=False)
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Plan it")
    scripted_model.script.extend(
        [
            tool_calls(kyoto_plan_call()),
            tool_calls(
                call("update_subtask_state", subtask_idx=0, state="in_progress"),
                call("revise_current_plan", subtask_idx=1, action="delete"),
                call("update_subtask_state", subtask_idx=1, state="abandoned"),
            ),
            say("Done for now."),
        ]
    )
    loop.execute_run(run_id=run.pk)
    plan = Plan.objects.get(pk=ChatSession.objects.get(pk=chat_session.pk).current_plan_id)
    subtasks = by_name(plan)
    assert order(plan) == ["Book flights", "Plan days"]
    assert subtasks["Plan days"]["state"] == "abandoned"
    assert subtasks["Book flights"]["state"] == "in_progress"


class WorkerDied(BaseException):
    """Stands for the worker process being killed between two tool calls."""


def test_a_resumed_answer_resolves_indices_as_the_first_worker_would(
    chat_session: ChatSession, user: Any, scripted_model: ScriptedModel, monkeypatch: Any
) -> None:
    services.session_update(session_id=chat_session.pk, need_user_confirm=False)
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Plan it")
    scripted_model.script.extend(
        [
            tool_calls(kyoto_plan_call()),
            tool_calls(
                call("revise_current_plan", subtask_idx=0, action="add", subtask={"name": "Visa"}),
                call("revise_current_plan", subtask_idx=1, action="delete"),
            ),
            say("Done."),
        ]
    )
    real = tools.execute_tool_call
    calls: list[str] = []

    def dies_on_the_second_call_of_the_answer(**kwargs: Any) -> str:
        calls.append(kwargs["name"])
        if calls == ["create_plan", "revise_current_plan", "revise_current_plan"]:
            raise WorkerDied()
        return real(**kwargs)

    monkeypatch.setattr(tools, "execute_tool_call", dies_on_the_second_call_of_the_answer)
    with pytest.raises(WorkerDied):
        loop.execute_run(run_id=run.pk, worker="first")
    monkeypatch.setattr(tools, "execute_tool_call", real)
    AgentRun.objects.filter(pk=run.pk).update(lease_expires_at=None)
    loop.execute_run(run_id=run.pk, worker="second")

    plan = Plan.objects.get(pk=ChatSession.objects.get(pk=chat_session.pk).current_plan_id)
    # Index 1 meant 'Book flights' (pushed there by the model's own add), not 'Book hotel'.
    assert order(plan) == ["Visa", "Book hotel", "Plan days"]
    step = AgentStep.objects.get(run=run, number=2)
    assert [s[1] for s in step.shown_plan["subtasks"]] == ["Visa", "Book hotel", "Plan days"]


# --- real concurrency: the person's edit comes from another connection mid-answer --------------


def _from_another_connection(work: Callable[[], None]) -> None:
    failures: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:
            failures.append(exc)
        finally:
            db.close_thread_connections()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not failures, failures


@pytest.mark.parametrize(
    ("edit", "agent_call", "check"),
    [
        (
            move_flights_down,
            lambda: call("finish_subtask", subtask_idx=0, subtask_outcome="Tickets"),
            # The in-order rule refuses; before the fix, the never-started card was finished.
            lambda s: (
                s["Book flights"]["state"] == "in_progress"
                and s["Book hotel"]["state"] == "todo"
                and s["Book hotel"]["outcome"] == ""
            ),
        ),
        (
            insert_at_top,
            lambda: call("revise_current_plan", subtask_idx=2, action="delete"),
            lambda s: "Plan days" not in s and "Get visa" in s and "Book hotel" in s,
        ),
        (
            delete_hotel,
            lambda: call(
                "revise_current_plan", subtask_idx=1, action="revise", subtask={"name": "X"}
            ),
            lambda s: "X" not in s and sorted(s) == ["Book flights", "Plan days"],
        ),
        (
            insert_at_top,
            lambda: call("update_subtask_state", subtask_idx=1, state="abandoned"),
            lambda s: s["Book hotel"]["state"] == "abandoned" and s["Get visa"]["state"] == "todo",
        ),
    ],
    ids=["finish-after-move", "delete-after-insert", "revise-after-delete", "state-after-insert"],
)
def test_a_persons_edit_during_the_model_call_on_postgres(
    postgres: None,
    django_user_model: Any,
    scripted_model: ScriptedModel,
    edit: Edit,
    agent_call: Callable[[], dict[str, Any]],
    check: Callable[[dict[str, dict[str, Any]]], bool],
) -> None:
    owner = django_user_model.objects.create_user("racer")
    person = Actor.person(owner)
    session = services.session_create(owner=owner)
    services.session_update(session_id=session.pk, need_user_confirm=False)
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=person,
        name="Kyoto trip",
        subtasks=[{"name": n} for n in ("Book flights", "Book hotel", "Plan days")],
    )
    first = by_name(plan)["Book flights"]["id"]
    services.subtask_set_state(plan_id=plan.pk, actor=person, subtask_id=first, state="in_progress")
    _, run = services.message_post(session_id=session.pk, author=owner, content="Go on")
    scripted_model.script.extend(
        [
            do(lambda _messages: _from_another_connection(lambda: edit(plan, person))),
            tool_calls(agent_call()),
            say("Noted."),
        ]
    )
    loop.execute_run(run_id=run.pk)
    assert check(by_name(plan)), (order(plan), by_name(plan))
    # The model answered from a hint older than the person's edit.
    shown_version = run.steps.get(number=1).plan_version
    edit_version = plan.events.filter(actor_user__isnull=False).order_by("-version").first()
    assert edit_version is not None and shown_version is not None
    assert shown_version < edit_version.version
