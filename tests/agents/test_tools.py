"""The ten agent plan tools: schemas, argument checking, and every tool's success and error paths.

A failed call must return `Error: …` and leave the database exactly as it was, so most error
tests compare a fingerprint of every plan row before and after.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import transaction

from agents import tools
from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import ChatSession, Plan, PlanEvent, SubTask
from planboard.services import Actor

SUBTASKS = [
    {"name": "Book flights", "description": "Find flights", "expected_outcome": "Tickets"},
    {"name": "Book hotel", "description": "Near Gion", "expected_outcome": "Reservation"},
    {"name": "Plan days", "description": "Temples", "expected_outcome": "Day plans"},
]


def call(session: ChatSession, actor: Actor, name: str, arguments: Any = None) -> str:
    return tools.execute_tool_call(
        session_id=session.pk, actor=actor, name=name, arguments=arguments
    )


def fingerprint() -> tuple[Any, ...]:
    """Everything a tool could change; equal before and after means nothing changed."""
    return (
        PlanEvent.objects.count(),
        list(Plan.objects.order_by("id").values_list("id", "version", "state", "name", "outcome")),
        list(
            SubTask.objects.order_by("id").values_list(
                "id", "plan_id", "position", "state", "name", "description", "outcome"
            )
        ),
        list(ChatSession.objects.order_by("id").values_list("id", "current_plan_id")),
    )


def states(plan: Plan) -> list[str]:
    return [s["state"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]


def names(plan: Plan) -> list[str]:
    return [s["name"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]


def subtask_ids(plan: Plan) -> list[int]:
    return [s["id"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]


def assert_error_unchanged(
    session: ChatSession, actor: Actor, name: str, arguments: Any, *fragments: str
) -> str:
    before = fingerprint()
    result = call(session, actor, name, arguments)
    assert result.startswith("Error: "), result
    for fragment in fragments:
        assert fragment in result, (fragment, result)
    assert fingerprint() == before
    return result


# --- schemas ----------------------------------------------------------------------------------

CONTRACT = {
    "create_plan": ({"name", "description", "expected_outcome", "subtasks"}, set()),
    "update_plan_info": (set(), {"name", "description", "expected_outcome"}),
    "revise_current_plan": ({"subtask_idx", "action"}, {"subtask"}),
    "update_subtask_state": ({"subtask_idx", "state"}, set()),
    "finish_subtask": ({"subtask_idx", "subtask_outcome"}, set()),
    "view_subtasks": ({"subtask_idx"}, set()),
    "get_subtask_count": (set(), set()),
    "finish_plan": ({"state", "outcome"}, set()),
    "view_historical_plans": (set(), set()),
    "recover_historical_plan": ({"plan_id"}, set()),
}


def test_schemas_are_openai_function_tools_with_the_contract_names() -> None:
    assert [s["function"]["name"] for s in tools.TOOL_SCHEMAS] == list(CONTRACT)
    for schema in tools.TOOL_SCHEMAS:
        assert schema["type"] == "function"
        function = schema["function"]
        assert len(function["description"]) > 40
        parameters = function["parameters"]
        assert parameters["type"] == "object"
        required, optional = CONTRACT[function["name"]]
        assert set(parameters["required"]) == required
        assert set(parameters["properties"]) == required | optional
    assert json.loads(json.dumps(tools.TOOL_SCHEMAS)) == tools.TOOL_SCHEMAS
    props = {
        s["function"]["name"]: s["function"]["parameters"]["properties"] for s in tools.TOOL_SCHEMAS
    }
    assert props["view_subtasks"]["subtask_idx"] == {
        "type": "array",
        "items": {"type": "integer"},
        "description": props["view_subtasks"]["subtask_idx"]["description"],
    }
    assert props["update_subtask_state"]["state"]["enum"] == ["todo", "in_progress", "abandoned"]
    assert props["finish_plan"]["state"]["enum"] == ["done", "abandoned"]


def test_tool_names_and_is_plan_tool() -> None:
    assert frozenset(CONTRACT) == tools.TOOL_NAMES
    assert set(tools.HANDLERS) == tools.TOOL_NAMES  # every schema has an adapter
    assert tools.is_plan_tool("finish_subtask")
    assert not tools.is_plan_tool("web_search")
    assert not tools.is_plan_tool("")


# --- argument parsing -------------------------------------------------------------------------


def test_malformed_json_is_an_error(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    assert_error_unchanged(
        chat_session, agent, "finish_subtask", '{"subtask_idx": 0,', "not valid JSON"
    )


@pytest.mark.parametrize("arguments", ["[0, 1]", '"finish it"', "3", [0, 1]])
def test_arguments_must_be_an_object(
    plan: Plan, chat_session: ChatSession, agent: Actor, arguments: Any
) -> None:
    assert_error_unchanged(chat_session, agent, "finish_subtask", arguments, "JSON object")


def test_unknown_tool_lists_the_valid_names(chat_session: ChatSession, agent: Actor) -> None:
    result = assert_error_unchanged(chat_session, agent, "make_plan", {}, "'make_plan'")
    for name in tools.TOOL_NAMES:
        assert name in result


def test_missing_arguments_are_named(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    assert_error_unchanged(
        chat_session, agent, "finish_subtask", {"subtask_idx": 0}, "'subtask_outcome'"
    )
    assert_error_unchanged(
        chat_session,
        agent,
        "create_plan",
        {"name": "X", "description": "d", "expected_outcome": "e"},
        "'subtasks'",
    )
    # null for a required argument counts as missing
    assert_error_unchanged(
        chat_session, agent, "finish_plan", {"state": None, "outcome": "x"}, "'state'"
    )


def test_extra_arguments_are_named(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "update_subtask_state",
        {"subtask_idx": 0, "state": "in_progress", "reason": "go"},
        "'reason'",
        "subtask_idx, state",
    )
    assert_error_unchanged(chat_session, agent, "get_subtask_count", {"plan": 1}, "'plan'")


def test_digit_strings_count_as_integers(
    chat_session: ChatSession, plan: Plan, agent: Actor
) -> None:
    """Models often quote numbers; like pydantic's lax mode, a digit string is its integer."""
    assert (
        call(chat_session, agent, "view_subtasks", {"subtask_idx": ["1", " 2 "]}).count(
            "Expected outcome"
        )
        == 2
    )
    result = call(
        chat_session, agent, "finish_subtask", {"subtask_idx": "0", "subtask_outcome": "ok"}
    )
    assert result.startswith("Subtask 0 ("), result
    assert states(plan)[0] == "done"
    historical = call(chat_session, agent, "recover_historical_plan", {"plan_id": str(plan.pk)})
    # The id was accepted as a number: what is left is the business rule (it is current).
    assert "must be an integer" not in historical, historical


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("finish_subtask", {"subtask_idx": "first", "subtask_outcome": "x"}, "'subtask_idx'"),
        ("finish_subtask", {"subtask_idx": "1.0", "subtask_outcome": "x"}, "'subtask_idx'"),
        ("finish_subtask", {"subtask_idx": "", "subtask_outcome": "x"}, "'subtask_idx'"),
        ("finish_subtask", {"subtask_idx": True, "subtask_outcome": "x"}, "boolean"),
        ("finish_subtask", {"subtask_idx": 0.5, "subtask_outcome": "x"}, "integer"),
        ("finish_subtask", {"subtask_idx": 0, "subtask_outcome": ["x"]}, "'subtask_outcome'"),
        ("update_plan_info", {"name": 5}, "'name'"),
        ("view_subtasks", {"subtask_idx": 0}, "must be a list"),
        ("recover_historical_plan", {"plan_id": "one"}, "'plan_id'"),
        (
            "create_plan",
            {"name": "X", "description": "d", "expected_outcome": "e", "subtasks": 3},
            "'subtasks'",
        ),
        (
            "create_plan",
            {"name": "X", "description": "d", "expected_outcome": "e", "subtasks": "[{"},
            "not valid JSON",
        ),
        (
            "create_plan",
            {"name": "X", "description": "d", "expected_outcome": "e", "subtasks": '{"a": 1}'},
            "must be a list",
        ),
        ("revise_current_plan", {"subtask_idx": 0, "action": "revise", "subtask": 7}, "object"),
    ],
)
def test_wrong_types_are_errors(
    plan: Plan,
    chat_session: ChatSession,
    agent: Actor,
    name: str,
    arguments: dict[str, Any],
    fragment: str,
) -> None:
    assert_error_unchanged(chat_session, agent, name, arguments, fragment)


@pytest.mark.parametrize("arguments", [None, "", "  ", "{}", "null", {}])
def test_tools_without_arguments_accept_empty_input(
    plan: Plan, chat_session: ChatSession, agent: Actor, arguments: Any
) -> None:
    assert call(chat_session, agent, "get_subtask_count", arguments).startswith("The current plan")


def test_unknown_session_is_an_error(agent: Actor) -> None:
    result = tools.execute_tool_call(
        session_id=987654, actor=agent, name="get_subtask_count", arguments=None
    )
    assert result.startswith("Error: ") and "987654" in result


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("update_plan_info", {"name": "X"}),
        ("revise_current_plan", {"subtask_idx": 0, "action": "delete"}),
        ("update_subtask_state", {"subtask_idx": 0, "state": "in_progress"}),
        ("finish_subtask", {"subtask_idx": 0, "subtask_outcome": "x"}),
        ("view_subtasks", {"subtask_idx": [0]}),
        ("finish_plan", {"state": "done", "outcome": "x"}),
    ],
)
def test_tools_needing_a_plan_say_there_is_none(
    chat_session: ChatSession, agent: Actor, name: str, arguments: dict[str, Any]
) -> None:
    assert_error_unchanged(chat_session, agent, name, arguments, "no current plan", "create_plan")


# --- create_plan ------------------------------------------------------------------------------


def create_args(subtasks: Any = None, **overrides: Any) -> dict[str, Any]:
    return {
        "name": "Kyoto trip",
        "description": "Three days in Kyoto",
        "expected_outcome": "An itinerary",
        "subtasks": SUBTASKS if subtasks is None else subtasks,
        **overrides,
    }


def test_create_plan_ignores_state_and_outcome_from_the_model(
    chat_session: ChatSession, agent: Actor
) -> None:
    sent = [{**SUBTASKS[0], "state": "done", "outcome": "Already booked"}, SUBTASKS[1]]
    result = call(chat_session, agent, "create_plan", json.dumps(create_args(sent)))
    chat_session.refresh_from_db()
    plan = chat_session.current_plan
    assert plan is not None
    assert f"Created plan {plan.pk} ('Kyoto trip') with 2 subtasks" in result
    assert "- [ ] 0. Book flights\n- [ ] 1. Book hotel" in result
    snapshot = selectors.plan_snapshot(plan_id=plan.pk)
    assert [(s["state"], s["outcome"]) for s in snapshot["subtasks"]] == [
        ("todo", ""),
        ("todo", ""),
    ]
    assert snapshot["state"] == "todo"
    assert "abandoned" not in result
    event = PlanEvent.objects.get(plan=plan)
    assert event.action == "plan_created" and event.actor_run_id == agent.run.pk


def test_create_plan_accepts_subtasks_as_a_json_string(
    chat_session: ChatSession, agent: Actor
) -> None:
    result = call(chat_session, agent, "create_plan", create_args(json.dumps(SUBTASKS)))
    assert not result.startswith("Error")
    chat_session.refresh_from_db()
    assert names(chat_session.current_plan) == ["Book flights", "Book hotel", "Plan days"]


def test_create_plan_reports_a_bad_subtask_and_creates_nothing(
    chat_session: ChatSession, agent: Actor
) -> None:
    bad = [SUBTASKS[0], {"name": "  ", "description": "x", "expected_outcome": "y"}]
    assert_error_unchanged(chat_session, agent, "create_plan", create_args(bad), "subtasks[1].name")
    assert_error_unchanged(
        chat_session, agent, "create_plan", create_args([SUBTASKS[0], "Book hotel"]), "Subtask 1"
    )
    assert Plan.objects.count() == 0


def test_create_plan_enforces_max_subtasks(chat_session: ChatSession, agent: Actor) -> None:
    services.session_update(session_id=chat_session.pk, max_subtasks=2)
    assert_error_unchanged(chat_session, agent, "create_plan", create_args(), "3 subtasks", "2")
    assert not call(chat_session, agent, "create_plan", create_args(SUBTASKS[:2])).startswith(
        "Error"
    )


def test_create_plan_abandons_the_unfinished_plan_and_keeps_it_in_history(
    plan: Plan, chat_session: ChatSession, agent: Actor, user: Any
) -> None:
    call(chat_session, agent, "update_subtask_state", {"subtask_idx": 0, "state": "in_progress"})
    result = call(chat_session, agent, "create_plan", create_args(name="Osaka trip"))
    plan.refresh_from_db()
    chat_session.refresh_from_db()
    assert plan.state == "abandoned"
    assert "Osaka trip" in plan.outcome  # the reason names the replacement
    assert f"plan {plan.pk} ('Kyoto trip')" in result and "abandoned" in result
    assert "history" in result
    assert chat_session.current_plan.name == "Osaka trip"
    assert list(selectors.historical_plans(owner=user)) == [plan]
    # its subtasks and history are kept
    assert states(plan) == ["in_progress", "todo", "todo"]
    assert PlanEvent.objects.filter(plan=plan, action="plan_abandoned").count() == 1


def test_create_plan_after_a_finished_plan_abandons_nothing(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    call(chat_session, agent, "finish_plan", {"state": "done", "outcome": "Trip planned"})
    result = call(chat_session, agent, "create_plan", create_args(name="Osaka trip"))
    assert "abandoned" not in result
    plan.refresh_from_db()
    assert plan.state == "done"


# --- update_plan_info -------------------------------------------------------------------------


def test_update_plan_info_reports_what_changed(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    result = call(
        chat_session,
        agent,
        "update_plan_info",
        {"name": "Kyoto and Nara", "description": None, "expected_outcome": "An itinerary"},
    )
    assert result == "Updated the plan: name: 'Kyoto trip' → 'Kyoto and Nara'."
    plan.refresh_from_db()
    assert plan.name == "Kyoto and Nara" and plan.expected_outcome == "An itinerary"
    assert call(chat_session, agent, "update_plan_info", {"name": "Kyoto and Nara"}).startswith(
        "Nothing changed"
    )


def test_update_plan_info_needs_a_field(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    assert_error_unchanged(chat_session, agent, "update_plan_info", {}, "at least one")
    assert_error_unchanged(chat_session, agent, "update_plan_info", {"name": ""}, "'name'")


# --- revise_current_plan ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("index", "expected"),
    [
        (0, ["Get visas", "Book flights", "Book hotel", "Plan days"]),
        (2, ["Book flights", "Book hotel", "Get visas", "Plan days"]),
        (3, ["Book flights", "Book hotel", "Plan days", "Get visas"]),
    ],
)
def test_revise_add_inserts_before_the_index(
    plan: Plan, chat_session: ChatSession, agent: Actor, index: int, expected: list[str]
) -> None:
    result = call(
        chat_session,
        agent,
        "revise_current_plan",
        {
            "subtask_idx": index,
            "action": "add",
            "subtask": {"name": "Get visas", "description": "Check", "expected_outcome": "Visas"},
        },
    )
    assert result.startswith(f"Added subtask {index} ('Get visas')")
    assert f"- [ ] {index}. Get visas" in result
    assert names(plan) == expected
    added = selectors.plan_snapshot(plan_id=plan.pk)["subtasks"][index]
    assert (added["state"], added["description"]) == ("todo", "Check")


def test_revise_add_accepts_a_json_string_subtask(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    arguments = {"subtask_idx": 1, "action": "add", "subtask": json.dumps({"name": "Get visas"})}
    assert not call(chat_session, agent, "revise_current_plan", arguments).startswith("Error")
    assert names(plan)[1] == "Get visas"


@pytest.mark.parametrize("index", [4, -1, 99])
def test_revise_add_out_of_range(
    plan: Plan, chat_session: ChatSession, agent: Actor, index: int
) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "revise_current_plan",
        {"subtask_idx": index, "action": "add", "subtask": {"name": "X"}},
        f"subtask_idx {index}",
        "0 to 3",
    )


def test_revise_add_needs_a_subtask_with_a_name(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    assert_error_unchanged(
        chat_session, agent, "revise_current_plan", {"subtask_idx": 0, "action": "add"}, "'subtask'"
    )
    assert_error_unchanged(
        chat_session,
        agent,
        "revise_current_plan",
        {"subtask_idx": 0, "action": "add", "subtask": {"description": "no name"}},
        "'name'",
    )


def test_revise_add_is_refused_at_max_subtasks(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    services.session_update(session_id=chat_session.pk, max_subtasks=3)
    assert_error_unchanged(
        chat_session,
        agent,
        "revise_current_plan",
        {"subtask_idx": 3, "action": "add", "subtask": {"name": "Pack"}},
        "3",
        "revise or delete",
    )


def test_revise_keeps_id_state_and_outcome(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    call(chat_session, agent, "update_subtask_state", {"subtask_idx": 0, "state": "in_progress"})
    call(chat_session, agent, "finish_subtask", {"subtask_idx": 0, "subtask_outcome": "JL123"})
    before = selectors.plan_snapshot(plan_id=plan.pk)["subtasks"][0]
    result = call(
        chat_session,
        agent,
        "revise_current_plan",
        {
            "subtask_idx": 0,
            "action": "revise",
            # state and outcome from the model are ignored: revising never changes them
            "subtask": {"name": "Book return flights", "state": "todo", "outcome": "lost"},
        },
    )
    assert result == (
        "Revised subtask 0 ('Book flights'): name: 'Book flights' → 'Book return flights'."
    )
    after = selectors.plan_snapshot(plan_id=plan.pk)["subtasks"][0]
    assert (after["id"], after["state"], after["outcome"]) == (before["id"], "done", "JL123")
    assert (after["name"], after["description"]) == ("Book return flights", "Find flights")


def test_revise_with_unchanged_values_changes_nothing(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    before = fingerprint()
    result = call(
        chat_session,
        agent,
        "revise_current_plan",
        {"subtask_idx": 1, "action": "revise", "subtask": {"name": "Book hotel"}},
    )
    assert result.startswith("Nothing changed: subtask 1 ('Book hotel')")
    assert fingerprint() == before


def test_revise_needs_a_text_field(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    for subtask in (None, {}, {"state": "done"}):
        assert_error_unchanged(
            chat_session,
            agent,
            "revise_current_plan",
            {"subtask_idx": 0, "action": "revise", "subtask": subtask},
            "'revise' needs 'subtask'",
        )


def test_revise_delete_removes_and_shifts(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    kept = subtask_ids(plan)[2]
    result = call(
        chat_session, agent, "revise_current_plan", {"subtask_idx": 1, "action": "delete"}
    )
    assert result.startswith("Deleted subtask 1 ('Book hotel')")
    assert "- [ ] 1. Plan days" in result
    assert names(plan) == ["Book flights", "Plan days"]
    assert subtask_ids(plan)[1] == kept


@pytest.mark.parametrize(("action", "index"), [("delete", 3), ("delete", -1), ("revise", 5)])
def test_revise_and_delete_out_of_range(
    plan: Plan, chat_session: ChatSession, agent: Actor, action: str, index: int
) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "revise_current_plan",
        {"subtask_idx": index, "action": action, "subtask": {"name": "X"}},
        f"subtask_idx {index}",
        "0 to 2",
    )


def test_delete_on_an_empty_plan_says_how_to_add(chat_session: ChatSession, agent: Actor) -> None:
    call(chat_session, agent, "create_plan", create_args([]))
    assert_error_unchanged(
        chat_session,
        agent,
        "revise_current_plan",
        {"subtask_idx": 0, "action": "delete"},
        "subtask_idx 0",
        "no subtasks",
        "'add'",
    )


def test_revise_unknown_action(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "revise_current_plan",
        {"subtask_idx": 0, "action": "move"},
        "'move'",
        "'add', 'revise' or 'delete'",
    )


# --- update_subtask_state ---------------------------------------------------------------------


def test_start_a_subtask(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    result = call(
        chat_session, agent, "update_subtask_state", {"subtask_idx": 0, "state": "in_progress"}
    )
    assert result == "Subtask 0 ('Book flights') is now in_progress."
    assert states(plan) == ["in_progress", "todo", "todo"]
    assert selectors.plan_snapshot(plan_id=plan.pk)["state"] == "in_progress"
    back = call(chat_session, agent, "update_subtask_state", {"subtask_idx": 0, "state": "todo"})
    assert back == "Subtask 0 ('Book flights') is now todo."
    assert selectors.plan_snapshot(plan_id=plan.pk)["state"] == "todo"


def test_done_is_refused_with_a_pointer_to_finish_subtask(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "update_subtask_state",
        {"subtask_idx": 1, "state": "done"},
        "'done'",
        "finish_subtask(subtask_idx=1",
    )


@pytest.mark.parametrize("state", ["paused", "DONE", ""])
def test_unknown_state_is_named(
    plan: Plan, chat_session: ChatSession, agent: Actor, state: str
) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "update_subtask_state",
        {"subtask_idx": 0, "state": state},
        repr(state),
        "'todo', 'in_progress' or 'abandoned'",
    )


@pytest.mark.parametrize("index", [3, -1])
def test_state_index_out_of_range(
    plan: Plan, chat_session: ChatSession, agent: Actor, index: int
) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "update_subtask_state",
        {"subtask_idx": index, "state": "in_progress"},
        f"subtask_idx {index}",
        "0 to 2",
    )


def test_agent_starts_subtasks_in_order(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "update_subtask_state",
        {"subtask_idx": 2, "state": "in_progress"},
        "subtask 2 ('Plan days')",
        "subtask 0 ('Book flights') is still todo",
    )
    # abandoning counts as finished: the next one may start
    assert call(
        chat_session, agent, "update_subtask_state", {"subtask_idx": 0, "state": "abandoned"}
    ).endswith("is now abandoned.")
    call(chat_session, agent, "update_subtask_state", {"subtask_idx": 1, "state": "in_progress"})
    assert states(plan) == ["abandoned", "in_progress", "todo"]


def test_same_state_is_an_error(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "update_subtask_state",
        {"subtask_idx": 1, "state": "todo"},
        "Subtask 1 ('Book hotel') is already todo",
    )


def test_one_in_progress_when_a_person_started_another(
    plan: Plan, chat_session: ChatSession, agent: Actor, actor: Actor
) -> None:
    """People may start any subtask; the agent then cannot start a second one."""
    ids = subtask_ids(plan)
    services.subtask_set_state(plan_id=plan.pk, actor=actor, subtask_id=ids[2], state="in_progress")
    assert_error_unchanged(
        chat_session,
        agent,
        "update_subtask_state",
        {"subtask_idx": 0, "state": "in_progress"},
        "subtask 2 ('Plan days') is already in progress",
    )
    assert states(plan).count("in_progress") == 1


def test_one_in_progress_when_the_agent_started_one(
    plan: Plan, chat_session: ChatSession, agent: Actor, actor: Actor
) -> None:
    """The agent's subtask in progress blocks a person from starting a second one."""
    call(chat_session, agent, "update_subtask_state", {"subtask_idx": 0, "state": "in_progress"})
    with pytest.raises(PlanError, match="already in progress"):
        services.subtask_set_state(
            plan_id=plan.pk, actor=actor, subtask_id=subtask_ids(plan)[2], state="in_progress"
        )
    # and the agent cannot start the next while its own is unfinished
    assert_error_unchanged(
        chat_session,
        agent,
        "update_subtask_state",
        {"subtask_idx": 1, "state": "in_progress"},
        "subtask 0 ('Book flights') is still in_progress",
    )
    assert states(plan) == ["in_progress", "todo", "todo"]


def test_index_is_resolved_again_when_a_person_edits_in_between(
    plan: Plan,
    chat_session: ChatSession,
    agent: Actor,
    actor: Actor,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A move committed between the tool's read and its write must not hit the wrong subtask."""
    real = services.subtask_set_state
    ids = subtask_ids(plan)
    raced: list[bool] = []

    def racing(**kwargs: Any) -> Any:
        if not raced:
            raced.append(True)
            services.subtask_move(plan_id=plan.pk, actor=actor, subtask_id=ids[2], index=0)
        return real(**kwargs)

    monkeypatch.setattr(services, "subtask_set_state", racing)
    result = call(
        chat_session, agent, "update_subtask_state", {"subtask_idx": 0, "state": "abandoned"}
    )
    assert result == "Subtask 0 ('Plan days') is now abandoned."
    assert names(plan) == ["Plan days", "Book flights", "Book hotel"]
    assert states(plan) == ["abandoned", "todo", "todo"]


# --- finish_subtask ---------------------------------------------------------------------------


def test_finish_subtask_starts_the_next(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    call(chat_session, agent, "update_subtask_state", {"subtask_idx": 0, "state": "in_progress"})
    result = call(
        chat_session, agent, "finish_subtask", {"subtask_idx": 0, "subtask_outcome": "JL123 booked"}
    )
    assert result.startswith("Subtask 0 ('Book flights') is done.\nStarted subtask 1 next:")
    assert "- [ ] [WIP] 1. Book hotel" in result and "Near Gion" in result
    snapshot = selectors.plan_snapshot(plan_id=plan.pk)
    assert [s["state"] for s in snapshot["subtasks"]] == ["done", "in_progress", "todo"]
    assert snapshot["subtasks"][0]["outcome"] == "JL123 booked"


@pytest.mark.parametrize("skipped_state", ["done", "abandoned"])
def test_finish_subtask_skips_finished_subtasks(
    plan: Plan, chat_session: ChatSession, agent: Actor, actor: Actor, skipped_state: str
) -> None:
    services.subtask_set_state(
        plan_id=plan.pk, actor=actor, subtask_id=subtask_ids(plan)[1], state=skipped_state
    )
    result = call(
        chat_session, agent, "finish_subtask", {"subtask_idx": 0, "subtask_outcome": "Booked"}
    )
    assert "Started subtask 2 next" in result
    assert states(plan) == ["done", skipped_state, "in_progress"]


def test_finish_the_last_subtask_says_nothing_is_left(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    for index in range(3):
        result = call(
            chat_session,
            agent,
            "finish_subtask",
            {"subtask_idx": index, "subtask_outcome": f"Outcome {index}"},
        )
    assert "No todo subtask is left" in result and "finish_plan" in result
    assert states(plan) == ["done", "done", "done"]


def test_finish_subtask_when_a_person_started_another(
    plan: Plan, chat_session: ChatSession, agent: Actor, actor: Actor
) -> None:
    ids = subtask_ids(plan)
    services.subtask_set_state(plan_id=plan.pk, actor=actor, subtask_id=ids[2], state="in_progress")
    result = call(
        chat_session, agent, "finish_subtask", {"subtask_idx": 0, "subtask_outcome": "OK"}
    )
    assert "Nothing new was started: subtask 2 ('Plan days') is in progress." in result
    assert states(plan) == ["done", "todo", "in_progress"]


def test_finish_subtask_errors(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "finish_subtask",
        {"subtask_idx": 0, "subtask_outcome": "   "},
        "'subtask_outcome' must not be empty",
    )
    assert_error_unchanged(
        chat_session,
        agent,
        "finish_subtask",
        {"subtask_idx": 1, "subtask_outcome": "Booked"},
        "subtask 0 ('Book flights') is still todo",
    )
    assert_error_unchanged(
        chat_session,
        agent,
        "finish_subtask",
        {"subtask_idx": 3, "subtask_outcome": "Booked"},
        "subtask_idx 3",
        "0 to 2",
    )
    call(chat_session, agent, "finish_subtask", {"subtask_idx": 0, "subtask_outcome": "Booked"})
    assert_error_unchanged(
        chat_session,
        agent,
        "finish_subtask",
        {"subtask_idx": 0, "subtask_outcome": "Again"},
        "Subtask 0 ('Book flights') is already done",
    )


# --- view_subtasks and get_subtask_count ------------------------------------------------------


def test_view_subtasks_shows_details(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    call(chat_session, agent, "finish_subtask", {"subtask_idx": 0, "subtask_outcome": "JL123"})
    result = call(chat_session, agent, "view_subtasks", {"subtask_idx": [0, 2]})
    assert result == (
        "- [x] 0. Book flights\n"
        "  Description: Find flights\n"
        "  Expected outcome: Tickets\n"
        "  Outcome: JL123\n"
        "  State: done\n"
        "- [ ] 2. Plan days\n"
        "  Description: Temples\n"
        "  Expected outcome: Day plans\n"
        "  State: todo"
    )


def test_view_subtasks_reports_invalid_indices_and_shows_valid_ones(
    plan: Plan, chat_session: ChatSession, agent: Actor
) -> None:
    result = call(chat_session, agent, "view_subtasks", {"subtask_idx": [7, 1, -1, "x"]})
    lines = result.splitlines()
    assert lines[0] == "Index 7 is out of range: the plan has 3 subtasks, so use 0 to 2."
    assert lines[1] == "- [ ] 1. Book hotel"
    assert "Index -1 is out of range" in result
    assert "'x' is not an integer index." in result


def test_view_subtasks_needs_indices(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    assert_error_unchanged(chat_session, agent, "view_subtasks", {"subtask_idx": []}, "empty")


def test_get_subtask_count(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    call(chat_session, agent, "finish_subtask", {"subtask_idx": 0, "subtask_outcome": "Booked"})
    assert call(chat_session, agent, "get_subtask_count") == (
        "The current plan 'Kyoto trip' has 3 subtasks: 1 todo, 1 in_progress, 1 done, 0 abandoned."
    )


def test_get_subtask_count_without_a_plan(chat_session: ChatSession, agent: Actor) -> None:
    result = call(chat_session, agent, "get_subtask_count")
    assert "no current plan" in result and not result.startswith("Error")


# --- finish_plan ------------------------------------------------------------------------------


@pytest.mark.parametrize("state", ["done", "abandoned"])
def test_finish_plan(
    plan: Plan, chat_session: ChatSession, agent: Actor, user: Any, state: str
) -> None:
    result = call(chat_session, agent, "finish_plan", {"state": state, "outcome": "Itinerary sent"})
    assert result.startswith(f"Plan {plan.pk} ('Kyoto trip') is finished as {state}")
    plan.refresh_from_db()
    chat_session.refresh_from_db()
    assert (plan.state, plan.outcome) == (state, "Itinerary sent")
    assert chat_session.current_plan_id is None
    assert list(selectors.historical_plans(owner=user)) == [plan]


def test_finish_plan_errors(plan: Plan, chat_session: ChatSession, agent: Actor) -> None:
    assert_error_unchanged(
        chat_session,
        agent,
        "finish_plan",
        {"state": "in_progress", "outcome": "x"},
        "'in_progress'",
    )
    assert_error_unchanged(
        chat_session, agent, "finish_plan", {"state": "done", "outcome": ""}, "'outcome'"
    )


# --- history ----------------------------------------------------------------------------------


def test_view_historical_plans_lists_only_the_owners_finished_plans(
    plan: Plan, chat_session: ChatSession, agent: Actor, other_user: Any
) -> None:
    assert (
        call(chat_session, agent, "view_historical_plans") == "There are no historical plans yet."
    )
    other_session = services.session_create(owner=other_user)
    services.plan_create(
        session_id=other_session.pk, actor=Actor.person(other_user), name="Secret", subtasks=[]
    )
    services.plan_create(
        session_id=other_session.pk, actor=Actor.person(other_user), name="Newer", subtasks=[]
    )
    call(chat_session, agent, "create_plan", create_args(name="Osaka trip"))
    result = call(chat_session, agent, "view_historical_plans")
    lines = result.splitlines()
    assert lines[0] == "Historical plans, newest first:"
    assert len(lines) == 2
    assert lines[1].startswith(f"- id {plan.pk}: 'Kyoto trip' (abandoned, created ")
    assert lines[1].endswith("): Three days in Kyoto")
    assert plan.created_at.strftime("%Y-%m-%d") in lines[1]
    assert "Secret" not in result and "Osaka" not in result


def test_recover_historical_plan_reopens_it_and_abandons_the_current_one(
    plan: Plan, chat_session: ChatSession, agent: Actor, user: Any
) -> None:
    call(chat_session, agent, "finish_subtask", {"subtask_idx": 0, "subtask_outcome": "Booked"})
    call(chat_session, agent, "finish_plan", {"state": "abandoned", "outcome": "Trip postponed"})
    call(chat_session, agent, "create_plan", create_args(name="Osaka trip"))
    chat_session.refresh_from_db()
    osaka = chat_session.current_plan

    result = call(chat_session, agent, "recover_historical_plan", {"plan_id": plan.pk})
    assert result.startswith(f"Recovered plan {plan.pk} ('Kyoto trip')")
    assert "- [x] 0. Book flights\n- [ ] [WIP] 1. Book hotel" in result
    assert f"plan {osaka.pk} ('Osaka trip')" in result and "abandoned" in result
    plan.refresh_from_db()
    osaka.refresh_from_db()
    chat_session.refresh_from_db()
    assert chat_session.current_plan_id == plan.pk
    assert (plan.state, plan.outcome, plan.finished_at) == ("in_progress", "", None)
    assert osaka.state == "abandoned" and osaka.outcome
    assert list(selectors.historical_plans(owner=user)) == [osaka]


def test_recover_refuses_other_users_and_unknown_plans(
    plan: Plan, chat_session: ChatSession, agent: Actor, other_user: Any
) -> None:
    other_session = services.session_create(owner=other_user)
    theirs, _ = services.plan_create(
        session_id=other_session.pk, actor=Actor.person(other_user), name="Secret", subtasks=[]
    )
    services.plan_finish(
        plan_id=theirs.pk, actor=Actor.person(other_user), state="done", outcome="Done"
    )
    assert_error_unchanged(
        chat_session, agent, "recover_historical_plan", {"plan_id": theirs.pk}, str(theirs.pk)
    )
    assert_error_unchanged(
        chat_session, agent, "recover_historical_plan", {"plan_id": 424242}, "424242"
    )
    assert_error_unchanged(
        chat_session, agent, "recover_historical_plan", {"plan_id": plan.pk}, "already the current"
    )


# --- inside the agent loop's transaction ------------------------------------------------------


def test_errors_inside_an_outer_transaction_leave_it_usable(
    plan: Plan,
    chat_session: ChatSession,
    agent: Actor,
    events: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        failed = call(
            chat_session, agent, "finish_subtask", {"subtask_idx": 2, "subtask_outcome": "x"}
        )
        done = call(
            chat_session, agent, "finish_subtask", {"subtask_idx": 0, "subtask_outcome": "Booked"}
        )
    assert failed.startswith("Error: ") and not done.startswith("Error")
    assert states(plan) == ["done", "in_progress", "todo"]
    broadcast = [e["action"] for e in events.plan_events(plan.pk)]
    assert broadcast == ["subtask_finished"]


@pytest.mark.parametrize("huge", [2**63, -(2**63) - 1, 10**30, str(10**30)])
def test_a_number_no_database_column_can_hold_is_a_clear_error(
    plan: Plan, chat_session: ChatSession, agent: Actor, huge: int | str
) -> None:
    # SQLite refused such a number with an OverflowError that escaped as a crash.
    assert_error_unchanged(
        chat_session, agent, "recover_historical_plan", {"plan_id": huge}, "out of range"
    )


@pytest.mark.django_db(transaction=True)  # the events leave as the change commits
def test_a_tool_calls_events_leave_in_one_round_trip(
    session: ChatSession, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creating a plan that replaces an unfinished one sends three events (the old plan
    abandoned, the new plan, the session's new current plan): together, in order, as the
    agent loop's batch would, also when the tool is called on its own."""
    from planboard import broadcast

    sent: list[list[str]] = []
    monkeypatch.setattr(
        broadcast, "_send_now", lambda messages: sent.append([m["type"] for _, m in messages])
    )
    actor = Actor.person(user)
    for name in ("First", "Second"):
        result = tools.execute_tool_call(
            session_id=session.pk,
            actor=actor,
            name="create_plan",
            arguments={"name": name, "description": "", "expected_outcome": "", "subtasks": []},
        )
        assert result.startswith("Created plan"), result
    plan_event = broadcast.encode_event({"type": "plan.event"})["type"]
    session_plan = broadcast.encode_event({"type": "session.plan"})["type"]
    assert sent == [[plan_event, session_plan], [plan_event, plan_event, session_plan]]
