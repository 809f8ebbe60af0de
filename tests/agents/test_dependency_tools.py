# Chinese expectations use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""Dependencies from the agent's side: the optional `blocked_by` of create_plan and
revise_current_plan (indices in, ids stored), the refusal to start a blocked subtask, what
finish_subtask starts next, the hint's list of blocked subtasks in both languages, and a model
that never sends the argument seeing what it always saw."""

from __future__ import annotations

from typing import Any

import pytest

from agents import tools
from agents.hints import build_hint
from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Plan, PlanEvent, SubTask
from planboard.services import Actor
from tests.agents.test_tools import SUBTASKS, assert_error_unchanged, call, fingerprint

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(chat_session: ChatSession) -> Actor:
    return Actor.agent(AgentRun.objects.create(session=chat_session))


def snapshot(session: ChatSession) -> dict[str, Any]:
    session.refresh_from_db()
    assert session.current_plan_id is not None
    return dict(selectors.plan_snapshot(plan_id=session.current_plan_id))


def blocked(session: ChatSession) -> list[list[int]]:
    return [s["blocked_by"] for s in snapshot(session)["subtasks"]]


def ids(session: ChatSession) -> list[int]:
    return [s["id"] for s in snapshot(session)["subtasks"]]


def create(session: ChatSession, actor: Actor, subtasks: list[dict[str, Any]]) -> str:
    return call(
        session,
        actor,
        "create_plan",
        {"name": "Trip", "description": "d", "expected_outcome": "e", "subtasks": subtasks},
    )


def with_blockers(*waits: list[int] | None) -> list[dict[str, Any]]:
    """SUBTASKS, each with the `blocked_by` given for it (None: left out)."""
    return [
        {**spec, "blocked_by": wait} if wait is not None else dict(spec)
        for spec, wait in zip(SUBTASKS, waits, strict=True)
    ]


def test_schemas_offer_the_optional_argument_in_the_subtask_objects() -> None:
    by_name = {s["function"]["name"]: s["function"]["parameters"] for s in tools.TOOL_SCHEMAS}
    items = by_name["create_plan"]["properties"]["subtasks"]["items"]
    assert items["properties"]["blocked_by"]["items"] == {"type": "integer"}
    assert "blocked_by" not in items["required"]
    revised = by_name["revise_current_plan"]["properties"]["subtask"]["properties"]
    assert revised["blocked_by"]["type"] == "array"
    # The top-level arguments of every tool are unchanged.
    assert set(by_name["create_plan"]["properties"]) == {
        "name", "description", "expected_outcome", "subtasks"
    }  # fmt: skip
    assert set(by_name["revise_current_plan"]["properties"]) == {
        "subtask_idx", "action", "subtask"
    }  # fmt: skip


def test_create_plan_stores_the_indices_as_ids(chat_session: ChatSession, agent: Actor) -> None:
    result = create(chat_session, agent, with_blockers(None, ["0"], [1, 0]))
    assert result.startswith("Created plan"), result
    first, second, _ = ids(chat_session)
    assert blocked(chat_session) == [[], [first], [first, second]]


@pytest.mark.parametrize(
    ("waits", "fragment"),
    [
        ((None, [2], [1]), "circle"),
        (([0], None, None), "cannot wait for itself"),
        ((None, [7], None), "has 3 subtasks"),
        ((None, {"a": 1}, None), "must be a list"),
    ],
)
def test_create_plan_refuses_bad_dependencies(
    chat_session: ChatSession, agent: Actor, waits: tuple[Any, ...], fragment: str
) -> None:
    before = fingerprint()
    result = create(chat_session, agent, with_blockers(*waits))
    assert result.startswith("Error: ") and fragment in result, result
    assert fingerprint() == before


def test_revise_sets_replaces_and_clears_blockers(
    chat_session: ChatSession, plan: Plan, agent: Actor
) -> None:
    first, second, third = ids(chat_session)
    args = {"subtask_idx": 2, "action": "revise", "subtask": {"blocked_by": [0, 1]}}
    result = call(chat_session, agent, "revise_current_plan", args)
    assert result == (
        "Revised subtask 2 ('Plan days'): it now waits for subtask 0 ('Book flights'), "
        "subtask 1 ('Book hotel')."
    )
    assert blocked(chat_session) == [[], [], [first, second]]
    args = {"subtask_idx": 2, "action": "revise", "subtask": {"name": "Days", "blocked_by": []}}
    result = call(chat_session, agent, "revise_current_plan", args)
    assert (
        result
        == "Revised subtask 2 ('Plan days'): name: 'Plan days' → 'Days'; it now waits for nothing."
    )
    assert blocked(chat_session) == [[], [], []]
    args = {"subtask_idx": 0, "action": "add", "subtask": {"name": "Visa", "blocked_by": [2]}}
    assert call(chat_session, agent, "revise_current_plan", args).startswith("Added subtask 0")
    assert blocked(chat_session)[0] == [third]


def test_revise_refuses_self_reference_cycles_and_bad_positions(
    chat_session: ChatSession, plan: Plan, agent: Actor
) -> None:
    def revise(index: int, waits: Any) -> dict[str, Any]:
        return {"subtask_idx": index, "action": "revise", "subtask": {"blocked_by": waits}}

    assert_error_unchanged(chat_session, agent, "revise_current_plan", revise(1, [1]), "itself")
    call(chat_session, agent, "revise_current_plan", revise(1, [0]))
    assert_error_unchanged(chat_session, agent, "revise_current_plan", revise(0, [1]), "circle")
    assert_error_unchanged(
        chat_session, agent, "revise_current_plan", revise(0, [9]), "out of range"
    )
    assert_error_unchanged(
        chat_session, agent, "revise_current_plan", revise(0, ["x"]), "positions (integers)"
    )


def test_the_agent_is_refused_a_blocked_start_and_told_by_what(
    chat_session: ChatSession, agent: Actor
) -> None:
    create(chat_session, agent, with_blockers(None, None, [0, 1]))
    args = {"subtask_idx": 2, "state": "in_progress"}
    result = assert_error_unchanged(chat_session, agent, "update_subtask_state", args, "blocked")
    assert "blocked by subtask 0 ('Book flights'), subtask 1 ('Book hotel')" in result
    # Position alone no longer blocks: the second subtask waits for nothing.
    ok = call(
        chat_session, agent, "update_subtask_state", {"subtask_idx": 1, "state": "in_progress"}
    )
    assert ok == "Subtask 1 ('Book hotel') is now in_progress."


def test_finish_subtask_starts_the_first_unblocked_todo(
    chat_session: ChatSession, agent: Actor
) -> None:
    # 0 waits for 2: after 1 is done, 2 is the first todo whose blockers are finished.
    create(chat_session, agent, with_blockers([2], None, None))
    call(chat_session, agent, "update_subtask_state", {"subtask_idx": 1, "state": "in_progress"})
    result = call(
        chat_session, agent, "finish_subtask", {"subtask_idx": 1, "subtask_outcome": "ok"}
    )
    assert "Started subtask 2 next:" in result, result
    result = call(
        chat_session, agent, "finish_subtask", {"subtask_idx": 2, "subtask_outcome": "ok"}
    )
    assert "Started subtask 0 next:" in result, result


def test_a_model_that_never_sends_the_argument_sees_the_old_rules(
    chat_session: ChatSession, agent: Actor
) -> None:
    create(chat_session, agent, [dict(s) for s in SUBTASKS])
    assert blocked(chat_session) == [[], [], []]
    # Earlier subtasks first, as always.
    result = call(
        chat_session, agent, "update_subtask_state", {"subtask_idx": 1, "state": "in_progress"}
    )
    assert result.startswith("Error: Cannot start subtask 1 ('Book hotel'): subtask 0")
    text = build_hint(
        snapshot=selectors.plan_snapshot(plan_id=snapshot(chat_session)["id"]),
        need_user_confirm=False,
        max_subtasks=None,
        language="en",
    )
    assert "Blocked" not in text and "waits for" not in text
    assert "update_subtask_state(subtask_idx=0" in text
    args = {"subtask_idx": 3, "action": "add", "subtask": {"name": "Pack"}}
    call(chat_session, agent, "revise_current_plan", args)
    added = PlanEvent.objects.filter(action="subtask_added").get()
    assert added.after is not None and "blocked_by" not in added.after
    assert not SubTask.objects.exclude(blocked_by=[]).exists()


BLOCKED = {
    "en": (
        "Blocked subtasks: each one can start only after every subtask it waits for is done or "
        "abandoned, so do not start it before then:\n"
        "- subtask 2 'Plan days' waits for subtask 0 'Book flights', subtask 1 'Book hotel'"
    ),
    "zh": (
        "被阻塞的子任务：只有在它所依赖的子任务全部完成或放弃之后才能开始，在此之前不要开始它：\n"
        "- 子任务 2“Plan days” 依赖 子任务 0“Book flights”、子任务 1“Book hotel”"
    ),
}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_hint_lists_what_is_blocked_and_by_what(
    chat_session: ChatSession, agent: Actor, actor: Actor, language: str
) -> None:
    create(chat_session, agent, with_blockers(None, None, [0, 1]))
    plan_id = snapshot(chat_session)["id"]

    def hint() -> str:
        return build_hint(
            snapshot=selectors.plan_snapshot(plan_id=plan_id),
            need_user_confirm=False,
            max_subtasks=None,
            language=language,
        )

    assert BLOCKED[language] in hint()
    first, second, _ = ids(chat_session)
    services.subtask_set_state(plan_id=plan_id, actor=actor, subtask_id=first, state="abandoned")
    services.subtask_set_state(plan_id=plan_id, actor=actor, subtask_id=second, state="in_progress")
    text = hint()
    # A finished blocker is no longer named; the unfinished one still is.
    assert "Book flights" not in text.split("\n\n", 2)[-1].split("Blocked")[-1]
    assert (
        "waits for subtask 1 'Book hotel'" if language == "en" else "依赖 子任务 1“Book hotel”"
    ) in text
    services.subtask_set_state(plan_id=plan_id, actor=actor, subtask_id=second, state="done")
    assert "Blocked" not in hint() and "被阻塞" not in hint()


def test_the_hint_suggests_the_first_subtask_that_may_start(
    chat_session: ChatSession, agent: Actor
) -> None:
    create(chat_session, agent, with_blockers([1], None, None))
    text = build_hint(
        snapshot=selectors.plan_snapshot(plan_id=snapshot(chat_session)["id"]),
        need_user_confirm=False,
        max_subtasks=None,
        language="en",
    )
    assert 'update_subtask_state(subtask_idx=1, state="in_progress")' in text
