"""Agent profiles per subtask, plan mode, budgets — through litellm's real code path with two
scripted models (providers `scripted` and `second`)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from agents import loop, tools
from agents.local_models import ProviderReply
from agents.models import AgentStep
from planboard import broadcast, selectors, services
from planboard.exceptions import PlanError
from planboard.models import AgentRun, ChatSession, Message, Plan, SubTask
from planboard.services import Actor
from tests.support import local_models
from tests.support.scripted import ScriptedModel, call, do, say, tool_calls

PLAN_TOOL_NAMES = {t["function"]["name"] for t in tools.TOOL_SCHEMAS}


@pytest.fixture
def second(settings: Any) -> Any:
    model = ScriptedModel()
    local_models.install(settings, provider="second", slot=local_models.SECOND, model=model)
    yield model
    local_models.SECOND.model = None


@pytest.fixture
def researcher(db: Any) -> Any:
    return services.profile_create(
        name="researcher",
        title="Researcher",
        description="Finds and compares options.",
        model="second/model-b",
        instructions="Always cite two sources.",
    )


def big_step(*calls: dict[str, Any]) -> ProviderReply:
    """An answer whose request the model reports as 100,000 prompt tokens."""
    return ProviderReply(tool_calls=list(calls), prompt_tokens=100_000)


def plan_call(*subtasks: dict[str, Any]) -> dict[str, Any]:
    return call(
        "create_plan",
        name="Trip",
        description="A trip",
        expected_outcome="Booked",
        subtasks=list(subtasks),
    )


def start(session: ChatSession, user: Any, text: str = "Plan a trip") -> AgentRun:
    _, run = services.message_post(session_id=session.pk, author=user, content=text)
    return loop.execute_run(run_id=run.pk)


def tool_names(request_tools: list[dict[str, Any]] | None) -> set[str]:
    return {t["function"]["name"] for t in request_tools or []}


def test_each_step_goes_to_the_profile_of_the_subtask_in_progress(
    session: ChatSession,
    user: Any,
    scripted_model: ScriptedModel,
    second: ScriptedModel,
    researcher: Any,
) -> None:
    scripted_model.script.extend(
        [
            tool_calls(
                plan_call(
                    {
                        "name": "Research",
                        "description": "",
                        "expected_outcome": "",
                        "agent": "researcher",
                    },
                    {"name": "Book", "description": "", "expected_outcome": ""},
                )
            ),
            tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress")),
        ]
    )
    second.script.extend(
        [tool_calls(call("finish_subtask", subtask_idx=0, subtask_outcome="Two sources found."))]
    )
    scripted_model.script.append(say("Booking is next."))  # subtask 1 has no profile
    run = start(session, user)
    assert run.status == AgentRun.Status.SUCCEEDED

    # The default model planned and started; the researcher (model B) did subtask 0.
    assert len(scripted_model.requests) == 3 and len(second.requests) == 1
    system = second.requests[0][0]["content"]
    assert "Always cite two sources." in system
    assert "researcher" in second.hint(0)
    assert "Always cite two sources." not in scripted_model.requests[2][0]["content"]
    steps = list(AgentStep.objects.filter(run=run).order_by("number"))
    assert [s.profile for s in steps] == ["", "", "researcher", ""]
    assert steps[2].model == "second/model-b"
    assert "researcher" in scripted_model.hint(0)  # the profiles it may choose are listed


def test_a_person_changing_the_cards_profile_changes_the_next_request(
    session: ChatSession,
    user: Any,
    scripted_model: ScriptedModel,
    second: ScriptedModel,
    researcher: Any,
) -> None:
    def reassign(_: Any) -> None:
        plan = Plan.objects.get(session=session)
        subtask = SubTask.objects.get(plan=plan, position=0)
        services.subtask_update(
            plan_id=plan.pk, actor=Actor.person(user), subtask_id=subtask.pk, agent="researcher"
        )

    scripted_model.script.extend(
        [
            tool_calls(plan_call({"name": "Research", "description": "", "expected_outcome": ""})),
            do(reassign),  # while the model answers: the person sets the card's profile
            tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress")),
        ]
    )
    second.script.append(say("Researching as asked."))
    run = start(session, user)
    assert run.status == AgentRun.Status.SUCCEEDED
    assert len(second.requests) == 1  # the step after the change went to the new profile
    assert "researcher" in second.hint(0)


def test_an_unknown_profile_is_refused_with_a_clear_error(
    session: ChatSession, user: Any, scripted_model: ScriptedModel, researcher: Any
) -> None:
    scripted_model.script.extend(
        [
            tool_calls(
                plan_call(
                    {"name": "X", "description": "", "expected_outcome": "", "agent": "astronaut"}
                )
            ),
            say("I will pick an existing profile."),
        ]
    )
    start(session, user)
    (result,) = Message.objects.filter(session=session, role=Message.Role.TOOL)
    assert result.content.startswith("Error:")
    assert "astronaut" in result.content and "researcher" in result.content
    assert not Plan.objects.filter(session=session).exists()


def test_a_disabled_profile_cannot_be_chosen_and_falls_back_when_in_use(
    session: ChatSession,
    user: Any,
    scripted_model: ScriptedModel,
    second: ScriptedModel,
    researcher: Any,
) -> None:
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=Actor.person(user),
        name="Trip",
        subtasks=[{"name": "Research", "agent": "researcher"}],
    )
    subtask = SubTask.objects.get(plan=plan)
    services.subtask_set_state(
        plan_id=plan.pk, actor=Actor.person(user), subtask_id=subtask.pk, state="in_progress"
    )
    services.profile_update(profile_id=researcher.pk, enabled=False)
    with pytest.raises(Exception, match="no agent profile named 'researcher'"):
        services.subtask_add(
            plan_id=plan.pk, actor=Actor.person(user), name="Y", agent="researcher"
        )
    scripted_model.script.append(say("Carrying on with the default."))
    run = start(session, user)
    assert run.status == AgentRun.Status.SUCCEEDED
    assert second.requests == []
    assert "not available" in scripted_model.hint(0)


def test_plan_mode_off_gives_a_plain_chat_and_back_on_keeps_the_transcript(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    services.session_update(session_id=session.pk, plan_mode=False)
    scripted_model.script.append(say("Hello! Just chatting."))
    start(session, user, "Hi there")
    assert tool_names(scripted_model.tools[0]) & PLAN_TOOL_NAMES == set()
    assert all("<system-hint>" not in str(m.get("content")) for m in scripted_model.requests[0])

    services.session_update(session_id=session.pk, plan_mode=True)
    scripted_model.script.append(say("Now with a plan hint."))
    start(session, user, "Now plan")
    assert PLAN_TOOL_NAMES <= tool_names(scripted_model.tools[1])
    request = scripted_model.requests[1]
    assert "<system-hint>" in request[-1]["content"]
    said = [m["content"] for m in request if m["role"] in ("user", "assistant")]
    assert "Hi there" in said and "Hello! Just chatting." in said  # the transcript stays


def test_a_plan_tool_called_with_plan_mode_off_is_an_error(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    services.session_update(session_id=session.pk, plan_mode=False)
    scripted_model.script.extend([tool_calls(call("get_subtask_count")), say("ok")])
    start(session, user)
    (result,) = Message.objects.filter(session=session, role=Message.Role.TOOL)
    assert result.content.startswith("Error:") and "plan mode" in result.content


def test_a_budget_pauses_the_run_at_the_right_step_and_it_resumes_when_raised(
    session: ChatSession,
    user: Any,
    scripted_model: ScriptedModel,
    django_capture_on_commit_callbacks: Any,
) -> None:
    # Each scripted step reports 100,000 prompt tokens; the limit allows two steps.
    services.session_update(session_id=session.pk, budget_tokens=200_000)
    scripted_model.script.extend(
        [
            big_step(call("get_subtask_count")),
            big_step(call("get_subtask_count")),
            say("done"),
        ]
    )
    run = start(session, user)
    assert run.status == AgentRun.Status.WAITING_FOR_USER
    assert run.pause_reason == AgentRun.PAUSE_BUDGET
    assert "200000 token limit" in run.error and "Raise the limit" in run.error
    assert run.step_count == 2  # the limit is checked before each call
    session.refresh_from_db()
    assert session.spent_tokens == 200_000

    from tests.support.env import DISPATCHED

    DISPATCHED.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.session_update(session_id=session.pk, budget_tokens=1_000_000)
    run.refresh_from_db()
    assert run.status == AgentRun.Status.QUEUED and DISPATCHED == [run.pk]
    run = loop.execute_run(run_id=run.pk)
    assert run.status == AgentRun.Status.SUCCEEDED and run.step_count == 3


def test_a_profile_budget_pauses_its_own_steps(
    session: ChatSession, user: Any, scripted_model: ScriptedModel
) -> None:
    services.profile_create(name="frugal", model="scripted/model", budget_tokens=100_000)
    services.session_update(session_id=session.pk, profile="frugal")
    scripted_model.script.extend([big_step(call("get_subtask_count")), say("never")])
    run = start(session, user)
    assert run.status == AgentRun.Status.WAITING_FOR_USER
    assert "'frugal'" in run.error and run.step_count == 1


def test_costs_are_attributed_to_the_subtask_in_progress_and_sum_to_the_run(
    session: ChatSession,
    user: Any,
    scripted_model: ScriptedModel,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    scripted_model.script.extend(
        [
            tool_calls(
                plan_call(
                    {"name": "A", "description": "", "expected_outcome": ""},
                    {"name": "B", "description": "", "expected_outcome": ""},
                )
            ),
            tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress")),
            tool_calls(call("finish_subtask", subtask_idx=0, subtask_outcome="A done")),
            tool_calls(call("finish_subtask", subtask_idx=1, subtask_outcome="B done")),
            say("All done."),
        ]
    )
    heard: list[dict[str, Any]] = []
    stop_hearing = broadcast.subscribe(
        lambda group, event: (
            heard.append(dict(event))
            if group.startswith("plan.") and event.get("type") == "plan.usage"
            else None
        )
    )
    try:
        with django_capture_on_commit_callbacks(execute=True):
            run = start(session, user)
    finally:
        stop_hearing()
    plan = Plan.objects.get(session=session)
    a, b = SubTask.objects.filter(plan=plan).order_by("position")
    steps = {s.number: s for s in AgentStep.objects.filter(run=run)}
    tokens = {n: s.prompt_tokens + s.completion_tokens for n, s in steps.items()}
    # Step 1 made the plan (no plan yet); steps 3 and 4 ran while A, then B, were in
    # progress; steps 2 and 5 belong to the plan but to no subtask.
    assert (steps[3].subtask_id, steps[4].subtask_id) == (a.pk, b.pk)
    assert (a.tokens, b.tokens) == (tokens[3], tokens[4])
    assert plan.tokens == a.tokens + b.tokens + tokens[2] + tokens[5]
    run.refresh_from_db()
    assert plan.tokens + tokens[1] == run.prompt_tokens + run.completion_tokens
    session.refresh_from_db()
    assert session.spent_tokens == run.prompt_tokens + run.completion_tokens
    usage = selectors.plan_usage(plan_id=plan.pk)
    assert usage["subtasks"][str(a.pk)]["tokens"] == a.tokens
    assert usage["tokens"] == plan.tokens
    # Clients hear the plan's new totals after each step on it (steps 2-5), with those of the
    # subtask the step was spent on; added up as the board does, they are the fresh totals.
    assert [e["tokens"] for e in heard] == [
        tokens[2],
        tokens[2] + tokens[3],
        tokens[2] + tokens[3] + tokens[4],
        plan.tokens,
    ]
    assert [list(e["subtasks"]) for e in heard] == [[], [str(a.pk)], [str(b.pk)], []]
    merged: dict[str, Any] = {}
    for event in heard:
        merged = {**event, "subtasks": {**merged.get("subtasks", {}), **event["subtasks"]}}
    # Each event also carries the session's total, every run's: the last one, the whole run's.
    assert merged["session"] == {
        "cost_usd": float(session.spent_usd),
        "tokens": session.spent_tokens,
    }
    del merged["type"], merged["session_id"], merged["session"]
    assert merged == usage


def test_the_demo_prices_its_tokens_so_cards_show_costs(
    session: ChatSession, user: Any, settings: Any
) -> None:
    settings.PLANBOARD_LLM_MODEL = "planboard-demo/offline"
    settings.PLANBOARD_DEMO_STEP_DELAY = 0
    for name in ("researcher", "booker", "writer"):
        services.profile_create(name=name, model="planboard-demo/offline")
    run = start(session, user, "Plan a two-day trip to Kyoto")
    assert run.status == AgentRun.Status.SUCCEEDED
    plan = Plan.objects.filter(session=session).latest("id")
    subtasks = list(SubTask.objects.filter(plan=plan).order_by("position"))
    assert {s.agent for s in subtasks} >= {"researcher", "booker", "writer"}
    assert all(s.cost_usd > 0 for s in subtasks)
    run.refresh_from_db()
    assert plan.cost_usd <= run.cost_usd and sum(s.cost_usd for s in subtasks) < plan.cost_usd
    assert run.cost_usd > Decimal(0)


def test_a_profile_limited_to_some_toolsets_is_offered_only_those(
    session: ChatSession,
    user: Any,
    staff: Any,
    researcher: Any,
    scripted_model: ScriptedModel,
    second: ScriptedModel,
) -> None:
    """While the researcher's subtask is in progress, its steps see only its toolsets; a call
    to a tool outside them is refused, even though the session enables it."""
    maps = services.toolset_create(user=staff, name="maps", kind="http", url="http://maps.test")
    mail = services.toolset_create(user=staff, name="mail", kind="http", url="http://mail.test")
    services.toolset_refresh_tools(toolset_id=maps.pk, tools=[{"name": "route"}])
    services.toolset_refresh_tools(toolset_id=mail.pk, tools=[{"name": "send"}])
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[maps.pk, mail.pk])
    services.profile_update(profile_id=researcher.pk, toolsets=[maps.pk])
    assert services.profile_update(profile_id=researcher.pk).toolsets.count() == 1

    scripted_model.script.append(
        tool_calls(plan_call({"name": "Find trains", "agent": "researcher"}))
    )
    scripted_model.script.append(
        tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress"))
    )
    second.script.append(tool_calls(call("mail__send", call_id="call_mail")))
    second.script.append(say("Could not send mail."))
    start(session, user)

    assert {"maps__route", "mail__send"} <= tool_names(scripted_model.tools[0])
    offered = tool_names(second.tools[0])
    assert "maps__route" in offered and "mail__send" not in offered
    refused = Message.objects.get(session=session, role="tool", tool_call_id="call_mail")
    assert refused.content.startswith("Error: there is no tool named 'mail__send'")


def test_profile_toolsets_must_exist(db: Any) -> None:
    with pytest.raises(PlanError, match="No toolset with id"):
        services.profile_create(name="lost", toolsets=[987654])
