# Chinese expectations use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""The hint builder: the five situations in both languages, the rules appended to each, the
"what changed" section built from real service events, the nudge, and the exact markdown."""

from __future__ import annotations

from typing import Any

import pytest

from agents import hint_changes, hints
from agents.hints import build_hint, detect_language, render_plan_markdown
from planboard import selectors, services
from planboard.models import ChatSession, Plan
from planboard.services import Actor

LANGUAGES = ["en", "zh"]

CASE_MARKER = {
    "no_plan": {"en": "There is no current plan", "zh": "当前会话还没有计划"},
    "not_started": {"en": "no subtask has been started yet", "zh": "还没有开始任何子任务"},
    "in_progress": {"en": "subtask 1 is in progress", "zh": "子任务 1 正在进行中"},
    "between": {"en": "2 of 4 subtasks are done", "zh": "4 个子任务中已完成 2 个"},
    "finished": {"en": "every subtask is finished", "zh": "所有子任务都已结束"},
    "empty": {"en": "it has no subtasks", "zh": "其中还没有子任务"},
}
CONFIRM = {"en": "wait for their go-ahead", "zh": "等用户同意后再执行"}
RULES = {"en": "without going through you", "zh": "无需经过你"}
LATEST = {"en": "Follow this latest plan", "zh": "始终以这份最新计划为准"}
LANGUAGE_RULE = {
    "en": "Answer in the language the plan is written in",
    "zh": "使用计划所用的语言回答",
}
LIMIT = {"en": "at most 5 subtasks", "zh": "最多只能有 5 个子任务"}
NUDGE = {"en": "Reminder:", "zh": "提醒："}
CHANGES = {"en": "What changed since your last step", "zh": "自你上一步以来的变化"}


def make_snapshot(states: list[str], *, plan_state: str = "in_progress") -> dict[str, Any]:
    """A plan snapshot shaped like `selectors.plan_snapshot`, without the database."""
    return {
        "id": 7,
        "session_id": 3,
        "owner": {"id": 1, "username": "alice"},
        "name": "Kyoto trip",
        "description": "Three days in Kyoto",
        "expected_outcome": "An itinerary",
        "state": plan_state,
        "outcome": "",
        "version": 4,
        "created_at": "2025-01-01T00:00:00+00:00",
        "finished_at": None,
        "subtasks": [
            {
                "id": 100 + index,
                "index": index,
                "name": f"Step {index}",
                "description": f"Do part {index}",
                "expected_outcome": f"Result {index}",
                "outcome": f"Outcome {index}" if state == "done" else "",
                "state": state,
                "created_at": "2025-01-01T00:00:00+00:00",
                "finished_at": None,
            }
            for index, state in enumerate(states)
        ],
    }


def hint(snapshot: dict[str, Any] | None, language: str, **options: Any) -> str:
    options.setdefault("need_user_confirm", False)
    options.setdefault("max_subtasks", None)
    return build_hint(snapshot=snapshot, language=language, **options)


def assert_common_rules(text: str, language: str, *, present: bool) -> None:
    for rule in (RULES, LATEST, LANGUAGE_RULE):
        assert (rule[language] in text) is present, (rule[language], text)


# --- markdown ------------------------------------------------------------------------------


def test_render_plan_markdown_exact_format_in_english() -> None:
    snapshot = make_snapshot(["todo", "in_progress", "done", "abandoned"])
    assert render_plan_markdown(snapshot) == (
        "# Kyoto trip\n"
        "Description: Three days in Kyoto\n"
        "Expected outcome: An itinerary\n"
        "State: in_progress\n"
        "Subtasks:\n"
        "- [ ] 0. Step 0\n"
        "- [ ] [WIP] 1. Step 1\n"
        "- [x] 2. Step 2\n"
        "- [ ] [Abandoned] 3. Step 3"
    )


def test_render_plan_markdown_exact_format_in_chinese() -> None:
    snapshot = make_snapshot(["todo", "in_progress", "done", "abandoned"])
    assert render_plan_markdown(snapshot, language="zh") == (
        "# Kyoto trip\n"
        "描述: Three days in Kyoto\n"
        "预期结果: An itinerary\n"
        "状态: in_progress\n"
        "子任务:\n"
        "- [ ] 0. Step 0\n"
        "- [ ] [WIP] 1. Step 1\n"
        "- [x] 2. Step 2\n"
        "- [ ] [Abandoned] 3. Step 3"
    )


def test_render_plan_markdown_of_an_empty_plan_has_no_checkbox_lines() -> None:
    text = render_plan_markdown(make_snapshot([], plan_state="todo"))
    assert text.endswith("Subtasks:\n(none)")
    assert "- [" not in text


def test_render_plan_markdown_keeps_each_subtask_on_one_line() -> None:
    snapshot = make_snapshot(["todo"])
    snapshot["subtasks"][0]["name"] = "Book\nflights  now"
    snapshot["name"] = "Kyoto\ntrip"
    text = render_plan_markdown(snapshot)
    assert text.startswith("# Kyoto trip\n")
    assert text.endswith("\n- [ ] 0. Book flights now")


def test_render_plan_markdown_of_a_real_snapshot(plan: Plan) -> None:
    text = render_plan_markdown(selectors.plan_snapshot(plan_id=plan.pk))
    assert text.splitlines()[-3:] == [
        "- [ ] 0. Book flights",
        "- [ ] 1. Book hotel",
        "- [ ] 2. Plan days",
    ]


@pytest.mark.parametrize(
    ("state", "line"),
    [
        ("todo", "- [ ] 2. Step 2"),
        ("in_progress", "- [ ] [WIP] 2. Step 2"),
        ("done", "- [x] 2. Step 2"),
        ("abandoned", "- [ ] [Abandoned] 2. Step 2"),
    ],
)
def test_render_subtask_markdown_one_line(state: str, line: str) -> None:
    subtask = make_snapshot(["todo", "todo", state])["subtasks"][2]
    assert hints.render_subtask_markdown(subtask) == line
    assert hints.render_subtask_markdown(subtask, language="zh") == line


def test_render_subtask_markdown_detailed() -> None:
    done, todo = make_snapshot(["done", "todo"])["subtasks"]
    assert hints.render_subtask_markdown(done, detailed=True) == (
        "- [x] 0. Step 0\n"
        "  Description: Do part 0\n"
        "  Expected outcome: Result 0\n"
        "  Outcome: Outcome 0\n"
        "  State: done"
    )
    # the actual outcome only appears once there is one
    assert hints.render_subtask_markdown(todo, detailed=True, language="zh") == (
        "- [ ] 1. Step 1\n  描述: Do part 1\n  预期结果: Result 1\n  状态: todo"
    )


# --- the five situations ---------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_case_1_no_plan(language: str) -> None:
    text = hint(None, language)
    assert text.startswith("<system-hint>\n") and text.endswith("\n</system-hint>")
    assert CASE_MARKER["no_plan"][language] in text
    assert "`create_plan`" in text
    assert CONFIRM[language] not in text
    assert LIMIT[language] not in text
    assert_common_rules(text, language, present=False)
    assert NUDGE[language] not in text and CHANGES[language] not in text


@pytest.mark.parametrize("language", LANGUAGES)
def test_case_1_confirmation_and_limit(language: str) -> None:
    text = hint(None, language, need_user_confirm=True, max_subtasks=5)
    assert CONFIRM[language] in text
    assert LIMIT[language] in text


@pytest.mark.parametrize("language", LANGUAGES)
def test_case_2_nothing_started(language: str) -> None:
    snapshot = make_snapshot(["todo", "todo", "todo"], plan_state="todo")
    text = hint(snapshot, language)
    assert CASE_MARKER["not_started"][language] in text
    assert render_plan_markdown(snapshot, language=language) in text
    assert 'update_subtask_state(subtask_idx=0, state="in_progress")' in text
    assert "`revise_current_plan`" in text
    assert 'finish_plan(state="abandoned"' in text
    assert CONFIRM[language] not in text
    assert LIMIT[language] not in text
    assert_common_rules(text, language, present=True)


@pytest.mark.parametrize("language", LANGUAGES)
def test_case_2_confirmation_and_limit(language: str) -> None:
    snapshot = make_snapshot(["todo", "todo", "todo"], plan_state="todo")
    text = hint(snapshot, language, need_user_confirm=True, max_subtasks=5)
    assert CONFIRM[language] in text
    assert LIMIT[language] in text
    assert "3" in text.split(LIMIT[language])[1].splitlines()[0]  # states the current count


def test_case_2_suggests_the_first_todo_when_earlier_ones_were_abandoned() -> None:
    text = hint(make_snapshot(["abandoned", "todo", "todo"]), "en")
    assert CASE_MARKER["not_started"]["en"] in text
    assert "update_subtask_state(subtask_idx=1," in text


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("confirm", [True, False])
def test_case_3_one_in_progress(language: str, confirm: bool) -> None:
    snapshot = make_snapshot(["done", "in_progress", "todo"])
    text = hint(snapshot, language, need_user_confirm=confirm, max_subtasks=5)
    assert CASE_MARKER["in_progress"][language] in text
    assert render_plan_markdown(snapshot, language=language) in text
    detail = hints.render_subtask_markdown(
        snapshot["subtasks"][1], detailed=True, language=language
    )
    assert detail in text and "Do part 1" in detail
    assert "finish_subtask(subtask_idx=1, subtask_outcome=...)" in text
    assert "`revise_current_plan`" in text
    assert CONFIRM[language] not in text  # confirmation only before work starts
    assert LIMIT[language] in text  # revising may add subtasks
    assert_common_rules(text, language, present=True)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("confirm", [True, False])
def test_case_4_between_subtasks(language: str, confirm: bool) -> None:
    snapshot = make_snapshot(["done", "abandoned", "done", "todo"])
    text = hint(snapshot, language, need_user_confirm=confirm, max_subtasks=5)
    assert CASE_MARKER["between"][language] in text
    assert render_plan_markdown(snapshot, language=language) in text
    assert 'update_subtask_state(subtask_idx=3, state="in_progress")' in text
    assert "Step 3" in text
    assert "finish_subtask" not in text
    assert CONFIRM[language] not in text
    assert LIMIT[language] not in text  # nothing is being added here
    assert_common_rules(text, language, present=True)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(
    "states",
    [["done", "done"], ["done", "abandoned"], ["abandoned", "abandoned", "abandoned"]],
)
def test_case_5_nothing_left(language: str, states: list[str]) -> None:
    snapshot = make_snapshot(states)
    text = hint(snapshot, language, need_user_confirm=True, max_subtasks=5)
    assert CASE_MARKER["finished"][language] in text
    assert CASE_MARKER["not_started"][language] not in text  # all-abandoned is not case 2
    assert render_plan_markdown(snapshot, language=language) in text
    assert "`finish_plan`" in text and 'state="done"' in text
    assert "update_subtask_state" not in text
    assert CONFIRM[language] not in text
    assert LIMIT[language] not in text
    assert_common_rules(text, language, present=False)


def test_case_5_counts_done_and_abandoned() -> None:
    text = hint(make_snapshot(["done", "abandoned", "abandoned"]), "en")
    assert "(1 done, 2 abandoned)" in text
    zh = hint(make_snapshot(["done", "abandoned", "abandoned"]), "zh")
    assert "完成 1 个，放弃 2 个" in zh


@pytest.mark.parametrize("language", LANGUAGES)
def test_empty_plan_gets_its_own_advice(language: str) -> None:
    snapshot = make_snapshot([], plan_state="todo")
    text = hint(snapshot, language, need_user_confirm=True, max_subtasks=5)
    assert CASE_MARKER["empty"][language] in text
    assert CASE_MARKER["finished"][language] not in text
    assert 'revise_current_plan(subtask_idx=0, action="add", subtask={...})' in text
    assert "`finish_plan`" in text
    assert LIMIT[language] in text
    assert CONFIRM[language] not in text
    assert_common_rules(text, language, present=False)


def test_chinese_hints_are_chinese() -> None:
    cases = [
        None,
        make_snapshot(["todo"]),
        make_snapshot(["in_progress"]),
        make_snapshot(["done", "todo"]),
        make_snapshot(["done"]),
        make_snapshot([]),
    ]
    for snapshot in cases:
        zh = hint(snapshot, "zh", need_user_confirm=True, max_subtasks=5, nudge=True)
        en = hint(snapshot, "en", need_user_confirm=True, max_subtasks=5, nudge=True)
        assert zh != en
        assert detect_language([zh]) == "zh"
        for english in ("What to do next", "Rules:", "Subtask limit", "Confirmation", "plan"):
            assert english not in zh.replace("_plan", "").replace("plan_", ""), english


def test_unknown_language_falls_back_to_english() -> None:
    assert hint(None, "fr") == hint(None, "en")


@pytest.mark.parametrize("language", LANGUAGES)
def test_nudge_only_when_asked(language: str) -> None:
    snapshot = make_snapshot(["in_progress", "todo"])
    assert NUDGE[language] in hint(snapshot, language, nudge=True)
    assert NUDGE[language] not in hint(snapshot, language, nudge=False)
    assert hint(snapshot, language, nudge=True).count(NUDGE[language]) == 1


def test_build_hint_makes_no_queries(plan: Plan, django_assert_num_queries: Any) -> None:
    snapshot = selectors.plan_snapshot(plan_id=plan.pk)
    events = selectors.plan_events_since(plan_id=plan.pk, version=0)
    with django_assert_num_queries(0):
        build_hint(
            snapshot=snapshot,
            need_user_confirm=True,
            max_subtasks=5,
            language="en",
            changes=events,
            nudge=True,
        )


# --- what changed since the agent's last step ----------------------------------------------------


def ids(plan: Plan) -> dict[str, int]:
    return {s["name"]: s["id"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]}


@pytest.fixture
def edited(plan: Plan, actor: Actor) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A person adds, moves, edits, completes and deletes subtasks and renames the plan."""
    start = plan.version
    sim = services.subtask_add(plan_id=plan.pk, actor=actor, name="Buy SIM", index=1)
    # [Book flights, Buy SIM, Book hotel, Plan days]
    services.subtask_move(plan_id=plan.pk, actor=actor, subtask_id=ids(plan)["Plan days"], index=0)
    # [Plan days, Book flights, Buy SIM, Book hotel]
    services.subtask_update(
        plan_id=plan.pk, actor=actor, subtask_id=ids(plan)["Book hotel"], description="Ryokan"
    )
    services.subtask_set_state(
        plan_id=plan.pk, actor=actor, subtask_id=ids(plan)["Book flights"], state="done"
    )
    services.subtask_delete(plan_id=plan.pk, actor=actor, subtask_id=sim.pk)
    # [Plan days, Book flights, Book hotel]
    services.plan_update_info(plan_id=plan.pk, actor=actor, name="Kyoto and Nara")
    services.plan_update_info(plan_id=plan.pk, actor=Actor(), description="Five days")
    changes = selectors.plan_events_since(plan_id=plan.pk, version=start)
    return selectors.plan_snapshot(plan_id=plan.pk), changes


def test_changes_section_lists_each_edit_with_who_and_what(
    edited: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    snapshot, changes = edited
    text = hint(snapshot, "en", changes=changes)
    section = text.split(CHANGES["en"])[1].split("\n\n")[0]
    assert section.splitlines()[1:] == [
        "- alice added subtask 'Buy SIM' (no longer in the plan).",
        "- alice moved subtask 0 'Plan days' from index 3 to 0.",
        "- alice edited subtask 2 'Book hotel': description changed.",
        "- alice changed the state of subtask 1 'Book flights': todo → done.",
        "- alice deleted subtask 'Buy SIM' (it was at index 2); later subtasks moved up.",
        "- alice edited the plan's name.",
        "- the system edited the plan's description.",
    ]
    # the plan shown is the edited one, in the case its states give (one done, none running)
    assert "- [ ] 0. Plan days\n- [x] 1. Book flights\n- [ ] 2. Book hotel" in text
    assert CASE_MARKER["between"]["en"].replace("2 of 4", "1 of 3") in text


def test_changes_section_in_chinese(edited: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    snapshot, changes = edited
    text = hint(snapshot, "zh", changes=changes)
    assert CHANGES["zh"] in text
    assert "- alice 添加了子任务“Buy SIM”（已不在计划中）。" in text
    assert "- alice 把子任务 0“Plan days”从位置 3 移到了位置 0。" in text
    assert "- alice 修改了子任务 2“Book hotel”的描述。" in text
    assert "- alice 把子任务 1“Book flights”的状态从 todo 改为 done。" in text
    assert "- alice 删除了子任务“Buy SIM”（原位置 2），后面的子任务依次前移。" in text
    assert "- alice 修改了计划的名称。" in text
    assert "- 系统 修改了计划的描述。" in text


def test_no_changes_section_without_changes(plan: Plan) -> None:
    text = hint(selectors.plan_snapshot(plan_id=plan.pk), "en", changes=[])
    assert CHANGES["en"] not in text


def test_changes_by_the_agent_and_finished_subtasks(
    plan: Plan, chat_session: ChatSession, user: Any
) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    start = plan.version
    flights = ids(plan)["Book flights"]
    services.subtask_finish(
        plan_id=plan.pk, actor=Actor.agent(run), subtask_id=flights, outcome="JL1"
    )
    changes = selectors.plan_events_since(plan_id=plan.pk, version=start)
    text = hint(selectors.plan_snapshot(plan_id=plan.pk), "en", changes=changes)
    assert "- the agent finished subtask 0 'Book flights' and started subtask 1." in text
    zh = hint(selectors.plan_snapshot(plan_id=plan.pk), "zh", changes=changes)
    assert "- 智能体 完成了子任务 0“Book flights”，并开始了子任务 1。" in zh


def test_changes_when_a_person_finished_and_reopened_the_plan(
    plan: Plan, chat_session: ChatSession, actor: Actor
) -> None:
    start = plan.version
    services.plan_finish(plan_id=plan.pk, actor=actor, state="done", outcome="Enough")
    finished = selectors.plan_events_since(plan_id=plan.pk, version=start)
    # the session has no current plan now: case 1, still told what happened
    text = hint(None, "en", changes=finished)
    assert CASE_MARKER["no_plan"]["en"] in text
    assert "- alice finished the plan as done." in text

    services.plan_recover(session_id=chat_session.pk, actor=actor, plan_id=plan.pk)
    changes = selectors.plan_events_since(plan_id=plan.pk, version=start)
    text = hint(selectors.plan_snapshot(plan_id=plan.pk), "en", changes=changes)
    assert (
        "- alice finished the plan as done.\n- alice reopened the plan; it is todo again." in text
    )


def test_changes_when_a_new_plan_replaced_the_old_one(
    plan: Plan, chat_session: ChatSession, actor: Actor
) -> None:
    start = plan.version
    new, _ = services.plan_create(
        session_id=chat_session.pk, actor=actor, name="Osaka trip", subtasks=[]
    )
    old_events = selectors.plan_events_since(plan_id=plan.pk, version=start)
    new_events = selectors.plan_events_since(plan_id=new.pk, version=0)
    text = hint(selectors.plan_snapshot(plan_id=new.pk), "en", changes=old_events + new_events)
    assert "- alice abandoned the plan.\n- alice created the plan 'Osaka trip'." in text


def test_long_change_lists_are_summarised() -> None:
    event = {
        "action": "subtask_state_changed",
        "actor": {"kind": "user", "username": "bob"},
        "subtask_id": 100,
        "before": {"index": 0, "state": "todo"},
        "after": {"index": 0, "state": "abandoned"},
    }
    changes = [event] * (hint_changes.MAX_CHANGE_LINES + 5)
    text = hint(make_snapshot(["abandoned", "todo"]), "en", changes=changes)
    assert (
        text.count("- bob changed the state of subtask 0 'Step 0'") == hint_changes.MAX_CHANGE_LINES
    )
    assert "- … and 5 more changes." in text


def test_unknown_events_and_missing_fields_do_not_break_the_hint() -> None:
    changes = [
        {"action": "subtask_exploded", "actor": None, "subtask_id": 999},
        {"action": "subtask_state_changed", "actor": {"kind": "user"}, "subtask_id": 999},
    ]
    text = hint(make_snapshot(["todo"]), "en", changes=changes)
    assert "- the system made a change (subtask_exploded)." in text
    assert "a subtask that is no longer in the plan" in text


# --- language detection ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["帮我规划一次去京都的三天旅行"], "zh"),
        (["帮我规划去Kyoto的旅行"], "zh"),
        (["Plan a three-day trip to Kyoto"], "en"),
        (["Plan a trip to 北京 next week"], "en"),
        (["Plan a trip", "好的，开始执行吧，谢谢你的帮助"], "zh"),
        ([], "en"),
        (["", "1234 !!"], "en"),
    ],
)
def test_detect_language(texts: list[str], expected: str) -> None:
    assert detect_language(texts) == expected


def test_both_languages_have_every_sentence() -> None:
    # A key missing in one language would fail only when that sentence is needed, mid-run.
    from agents.hint_texts import HINT_TEXTS

    assert set(HINT_TEXTS["zh"]) == set(HINT_TEXTS["en"])
    assert set(HINT_TEXTS) == set(hints.SUPPORTED_LANGUAGES)
