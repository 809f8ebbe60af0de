"""The offline demo model, run through the real loop and litellm's custom-provider path."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agents import demo_model, loop
from agents.demo_model import DemoModel
from agents.local_models import ProviderReply
from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Message, Plan, State, Toolset, WorkspaceFile
from planboard.services import Actor
from tests.support import local_models

DEMO = "planboard-demo/offline"


@pytest.fixture(autouse=True)
def demo_settings(settings: Any) -> None:
    settings.PLANBOARD_LLM_MODEL = DEMO
    settings.PLANBOARD_DEMO_STEP_DELAY = 0
    settings.PLANBOARD_LLM_RETRY_DELAY = 0


def say(session: ChatSession, user: Any, text: str) -> AgentRun:
    _, run = services.message_post(session_id=session.pk, author=user, content=text)
    return loop.execute_run(run_id=run.pk)


def current(session: ChatSession) -> dict[str, Any]:
    plan_id = ChatSession.objects.get(pk=session.pk).current_plan_id
    assert plan_id is not None
    return selectors.plan_snapshot(plan_id=plan_id)


def last_plan(user: Any) -> Plan:
    return Plan.objects.filter(owner=user).order_by("-id").first()


def agent_calls(session: ChatSession) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for message in Message.objects.filter(session=session, role="assistant").order_by("id"):
        for item in message.tool_calls or []:
            calls.append((item["function"]["name"], json.loads(item["function"]["arguments"])))
    return calls


def tool_errors(session: ChatSession) -> list[str]:
    return list(
        Message.objects.filter(
            session=session, role="tool", content__startswith="Error"
        ).values_list("content", flat=True)
    )


# --- the Kyoto walk-through ----------------------------------------------------------------


def test_kyoto_is_planned_confirmed_and_executed(user):
    session = services.session_create(owner=user)  # confirmation on, the default
    run = say(session, user, "Plan a three-day trip to Kyoto")

    assert run.status == AgentRun.Status.WAITING_FOR_USER
    plan = current(session)
    assert plan["name"] == "3-day trip to Kyoto"
    names = [s["name"] for s in plan["subtasks"]]
    assert names == [
        "Fix the dates and the budget",
        "Book transport to Kyoto",
        "Choose where to stay",
        "Draft the day-by-day itinerary",
    ]
    assert all(s["state"] == State.TODO for s in plan["subtasks"])
    question = Message.objects.filter(session=session, role="assistant").last()
    assert not question.tool_calls and 'Reply "go"' in question.content
    assert all(name in question.content for name in names)

    run = say(session, user, "Looks good, go")
    assert run.status == AgentRun.Status.SUCCEEDED
    plan = selectors.plan_snapshot(plan_id=plan["id"])
    assert plan["state"] == State.DONE
    assert [s["state"] for s in plan["subtasks"]] == [State.DONE] * 4
    itinerary = plan["subtasks"][3]["outcome"]
    assert "day 1: Fushimi Inari" in itinerary and "day 3: Kiyomizu-dera" in itinerary
    assert "day 4" not in itinerary
    summary = Message.objects.filter(session=session).order_by("id").last()
    assert summary.role == "assistant" and summary.content.startswith("All done")
    assert "Fushimi Inari" in summary.content
    assert ChatSession.objects.get(pk=session.pk).current_plan_id is None
    assert tool_errors(session) == []
    assert [name for name, _ in agent_calls(session)] == [
        "create_plan",
        "update_subtask_state",
        "finish_subtask",
        "finish_subtask",
        "finish_subtask",
        "finish_subtask",
        "finish_plan",
        "workspace__write_file",
    ]
    # The itinerary is left in the session's files, and the summary says so.
    (file,) = selectors.session_files(session_id=session.pk)
    assert file["path"] == "kyoto-itinerary.md" and file["produced_by_run_id"] == run.pk
    assert summary.content.endswith("The itinerary is in the session's files: kyoto-itinerary.md.")


def test_without_confirmation_it_runs_straight_through(user):
    session = services.session_create(owner=user, need_user_confirm=False)
    run = say(session, user, "Write a blog post about home composting")
    assert run.status == AgentRun.Status.SUCCEEDED
    plan = last_plan(user)
    assert plan.name == "Writing plan" and plan.state == State.DONE
    assert plan.subtasks.filter(state=State.DONE).count() == 4


def test_it_follows_the_plan_people_edited_before_the_go_ahead(user):
    session = services.session_create(owner=user)
    say(session, user, "Plan a three-day trip to Kyoto")
    plan = current(session)
    alice = Actor.person(user)
    stay, itinerary = plan["subtasks"][2], plan["subtasks"][3]
    services.subtask_delete(plan_id=plan["id"], actor=alice, subtask_id=stay["id"])
    services.subtask_update(
        plan_id=plan["id"], actor=alice, subtask_id=itinerary["id"], name="Plan temple visits"
    )
    added = services.subtask_add(
        plan_id=plan["id"],
        actor=alice,
        name="Book a tea ceremony",
        expected_outcome="A confirmed slot",
        index=1,
    )

    run = say(session, user, "go")
    assert run.status == AgentRun.Status.SUCCEEDED
    final = selectors.plan_snapshot(plan_id=plan["id"])
    assert [s["name"] for s in final["subtasks"]] == [
        "Fix the dates and the budget",
        "Book a tea ceremony",
        "Book transport to Kyoto",
        "Plan temple visits",
    ]
    assert all(s["state"] == State.DONE for s in final["subtasks"])
    outcomes = {s["id"]: s["outcome"] for s in final["subtasks"]}
    assert outcomes[added.pk].startswith("Book a tea ceremony: completed - A confirmed slot")
    assert outcomes[itinerary["id"]].startswith("Plan temple visits: completed")
    finished = [a["subtask_idx"] for n, a in agent_calls(session) if n == "finish_subtask"]
    assert finished == [0, 1, 2, 3]  # the deleted subtask was never worked on
    assert tool_errors(session) == []


class Hooked:
    """The demo model with a hook that runs before its n-th answer (people acting mid-run)."""

    def __init__(self, hooks: dict[int, Callable[[], None]]) -> None:
        self.hooks = hooks
        self.calls = 0
        self.demo = DemoModel()

    def respond(self, **kwargs: Any) -> ProviderReply:
        self.calls += 1
        if self.calls in self.hooks:
            self.hooks[self.calls]()
        return self.demo.respond(**kwargs)


@pytest.fixture
def hooked(settings: Any) -> Iterator[Callable[[dict[int, Callable[[], None]]], Hooked]]:
    def install(hooks: dict[int, Callable[[], None]]) -> Hooked:
        model = Hooked(hooks)
        local_models.install(settings, provider="hooked", slot=local_models.HOOKED, model=model)
        settings.PLANBOARD_LLM_MODEL = "hooked/demo"
        return model

    yield install
    local_models.HOOKED.model = None


def test_it_follows_edits_made_while_it_works(user, hooked):
    session = services.session_create(owner=user, need_user_confirm=False)
    alice = Actor.person(user)

    def add_and_abandon() -> None:
        plan = current(session)
        services.subtask_add(plan_id=plan["id"], actor=alice, name="Buy a rail pass")
        services.subtask_set_state(
            plan_id=plan["id"],
            actor=alice,
            subtask_id=plan["subtasks"][2]["id"],
            state="abandoned",
        )

    # Answer 3 is the first finish_subtask; by then people changed the plan.
    hooked({3: add_and_abandon})
    run = say(session, user, "Plan a three-day trip to Kyoto")

    assert run.status == AgentRun.Status.SUCCEEDED
    plan = last_plan(user)
    states = {s.name: s.state for s in plan.subtasks.all()}
    assert states == {
        "Fix the dates and the budget": State.DONE,
        "Book transport to Kyoto": State.DONE,
        "Choose where to stay": State.ABANDONED,
        "Draft the day-by-day itinerary": State.DONE,
        "Buy a rail pass": State.DONE,
    }
    assert plan.state == State.DONE
    assert tool_errors(session) == []


# --- what the user says ----------------------------------------------------------------------


def test_stop_abandons_the_plan(user):
    session = services.session_create(owner=user)
    say(session, user, "Plan a three-day trip to Kyoto")
    run = say(session, user, "Actually, stop. I changed my mind.")

    assert run.status == AgentRun.Status.SUCCEEDED
    plan = last_plan(user)
    assert plan.state == State.ABANDONED and plan.outcome == "Stopped at the user's request."
    final = Message.objects.filter(session=session).order_by("id").last()
    assert final.content.startswith("The plan was stopped as you asked")


def test_add_request_adds_a_subtask_and_asks_again(user):
    session = services.session_create(owner=user)
    say(session, user, "Plan a three-day trip to Kyoto")
    run = say(session, user, "Add a day trip to Nara")

    assert run.status == AgentRun.Status.WAITING_FOR_USER
    names = [s["name"] for s in current(session)["subtasks"]]
    assert names[-1] == "a day trip to Nara" and len(names) == 5


def test_the_subtask_limit_is_respected(user):
    session = services.session_create(owner=user, max_subtasks=2, need_user_confirm=False)
    run = say(session, user, "Plan a three-day trip to Kyoto")
    assert run.status == AgentRun.Status.SUCCEEDED
    assert last_plan(user).subtasks.count() == 2
    assert tool_errors(session) == []


def test_a_greeting_gets_an_answer_without_a_plan(user):
    session = services.session_create(owner=user)
    run = say(session, user, "hi")
    assert run.status == AgentRun.Status.SUCCEEDED
    assert not Plan.objects.exists()
    assert (
        "Plan a three-day trip to Kyoto" in Message.objects.filter(role="assistant").get().content
    )


def test_chinese_requests_get_a_chinese_plan(user):
    session = services.session_create(owner=user, need_user_confirm=False)
    run = say(session, user, "帮我规划一次三天的京都旅行")
    assert run.status == AgentRun.Status.SUCCEEDED
    plan = last_plan(user)
    assert plan.subtasks.first().name == "明确目标和约束"
    final = Message.objects.filter(session=session).order_by("id").last()
    assert final.content.startswith("全部完成")


def test_the_demo_is_deterministic(user, other_user):
    transcripts = []
    for owner in (user, other_user):
        session = services.session_create(owner=owner, need_user_confirm=False)
        say(session, owner, "Organise a birthday party for 30 people")
        transcripts.append(
            [
                (m.role, m.content, [c["function"] for c in m.tool_calls or []])
                # Tool results name database ids; what the model said must match exactly.
                for m in Message.objects.filter(session=session).exclude(role="tool").order_by("id")
            ]
        )
    assert transcripts[0] == transcripts[1]


# --- the itinerary file ----------------------------------------------------------------------


def itinerary(session: ChatSession) -> str:
    file = WorkspaceFile.objects.get(session=session, path="kyoto-itinerary.md")
    return selectors.workspace_file_bytes(file).decode()


def test_the_kyoto_itinerary_is_written_from_the_outcomes(user):
    session = services.session_create(owner=user, need_user_confirm=False)
    run = say(session, user, "Plan a three-day trip to Kyoto")
    assert run.status == AgentRun.Status.SUCCEEDED
    plan = last_plan(user)
    outcomes = [s.outcome for s in plan.subtasks.order_by("position")]
    text = itinerary(session)
    assert text.startswith("# 3-day trip to Kyoto\n\n## Day by day\n\n")
    assert "- **Day 1:** Fushimi Inari at sunrise, then Gion and Pontocho in the evening\n" in text
    assert (
        "- **Day 3:** Kiyomizu-dera and the Higashiyama lanes, Nishiki Market for lunch\n" in text
    )
    assert "Day 4" not in text
    assert "## Arrangements" in text
    for step, outcome in zip(plan.subtasks.order_by("position")[:3], outcomes[:3], strict=True):
        assert f"- **{step.name}:** {outcome}" in text
    # Written once, without asking anyone, after the plan was finished.
    calls = [name for name, _ in agent_calls(session)]
    assert calls[-2:] == ["finish_plan", "workspace__write_file"]
    assert session.tool_calls.get().status == "succeeded"
    assert tool_errors(session) == []


def test_the_itinerary_follows_the_board(user):
    session = services.session_create(owner=user)
    say(session, user, "Plan a three-day trip to Kyoto")
    plan = current(session)
    alice = Actor.person(user)
    services.subtask_update(
        plan_id=plan["id"], actor=alice, subtask_id=plan["subtasks"][2]["id"], name="Find a ryokan"
    )
    services.subtask_add(plan_id=plan["id"], actor=alice, name="Buy a travel adapter")
    say(session, user, "go")
    text = itinerary(session)
    assert "- **Find a ryokan:** Find a ryokan: completed" in text
    assert "- **Buy a travel adapter:** Buy a travel adapter: completed" in text
    assert "Choose where to stay" not in text


def test_without_the_workspace_the_demo_just_summarises(user):
    session = services.session_create(owner=user, need_user_confirm=False)
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[], user=user)
    run = say(session, user, "Plan a three-day trip to Kyoto")
    assert run.status == AgentRun.Status.SUCCEEDED
    assert "workspace__write_file" not in [name for name, _ in agent_calls(session)]
    summary = Message.objects.filter(session=session).order_by("id").last()
    assert summary.content.startswith("All done") and "files" not in summary.content
    assert not WorkspaceFile.objects.exists()


def test_a_refused_write_still_ends_with_the_summary(user, settings):
    settings.PLANBOARD_WORKSPACE_FILE_LIMIT = 20
    session = services.session_create(owner=user, need_user_confirm=False)
    run = say(session, user, "Plan a three-day trip to Kyoto")
    assert run.status == AgentRun.Status.SUCCEEDED
    (error,) = tool_errors(session)
    assert error.startswith("Error: 'content' is")
    summary = Message.objects.filter(session=session).order_by("id").last()
    assert summary.content.startswith("All done") and "files" not in summary.content


def test_other_plans_write_no_file(user):
    session = services.session_create(owner=user, need_user_confirm=False)
    say(session, user, "Write a blog post about home composting")
    assert not WorkspaceFile.objects.exists()
    assert "workspace__write_file" not in [name for name, _ in agent_calls(session)]


def test_an_abandoned_trip_writes_no_file(user):
    session = services.session_create(owner=user)
    say(session, user, "Plan a three-day trip to Kyoto")
    say(session, user, "stop")
    assert not WorkspaceFile.objects.exists()


def test_a_trip_elsewhere_gets_a_file_named_for_the_place(user):
    session = services.session_create(owner=user, need_user_confirm=False)
    say(session, user, "Plan a two-day trip to Paris")
    (file,) = selectors.session_files(session_id=session.pk)
    assert file["path"] == "paris-itinerary.md"


def test_staff_asking_for_writes_make_the_demo_wait(user, staff):
    toolset = Toolset.objects.get(name="workspace")
    services.toolset_update(toolset_id=toolset.pk, user=staff, tool_policies={"write_file": "ask"})
    session = services.session_create(owner=user, need_user_confirm=False)
    run = say(session, user, "Plan a three-day trip to Kyoto")
    assert run.status == AgentRun.Status.WAITING_FOR_APPROVAL
    (waiting,) = selectors.pending_tool_calls(session_id=session.pk)
    services.tool_call_decide(
        session_id=session.pk, tool_call_id=waiting.tool_call_id, user=user, decision="approve"
    )
    run = loop.execute_run(run_id=run.pk)
    assert run.status == AgentRun.Status.SUCCEEDED
    assert itinerary(session).startswith("# 3-day trip to Kyoto")


# --- the model on its own ----------------------------------------------------------------------


def hint(*lines: str) -> dict[str, str]:
    return {"role": "user", "content": "<system-hint>\n" + "\n".join(lines) + "\n</system-hint>"}


def answer(messages: list[dict[str, Any]]) -> ProviderReply:
    return DemoModel().respond(model=DEMO, messages=messages, tools=None)


def test_it_waits_the_configured_delay_before_answering(settings, monkeypatch):
    settings.PLANBOARD_DEMO_STEP_DELAY = 0.8
    slept: list[float] = []
    monkeypatch.setattr(demo_model.time, "sleep", slept.append)
    answer([{"role": "user", "content": "Plan a trip to Paris"}, hint("No plan.")])
    assert slept == [0.8]


def test_it_gives_up_politely_after_two_refused_calls():
    messages = [
        {"role": "user", "content": "Plan a trip"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "tool", "tool_call_id": "a", "content": "Error: no such subtask"},
        {"role": "tool", "tool_call_id": "b", "content": "Error: no such subtask"},
        hint("# Trip", "- [ ] [WIP] 0. Go"),
    ]
    reply = answer(messages)
    assert reply.tool_calls == [] and reply.content.startswith("I could not continue")


def test_an_empty_plan_is_closed():
    messages = [{"role": "user", "content": "go on"}, hint("# Trip", "Subtasks:", "(none)")]
    (item,) = answer(messages).tool_calls
    assert item["function"]["name"] == "finish_plan"
    assert json.loads(item["function"]["arguments"])["state"] == "abandoned"


@pytest.mark.parametrize(
    ("request_text", "first_subtask"),
    [
        ("Plan a two-day trip to Paris", "Fix the dates and the budget"),
        ("Write a report on solar panels", "Define the audience and the key message"),
        ("Organise a team workshop", "Set the date, venue and budget"),
        ("Help me learn Spanish", "Set the goal and the starting point"),
        ("Renovate the kitchen", "Clarify the goal and constraints"),
    ],
)
def test_templates_are_chosen_by_keywords(request_text: str, first_subtask: str):
    header, steps = demo_model.plan_for(request_text, language="en")
    assert steps[0]["name"] == first_subtask
    assert 3 <= len(steps) <= 5 and header["name"]
    assert all(step["outcome"] for step in steps)


def test_trip_length_and_destination_are_read_from_the_request():
    header, steps = demo_model.plan_for("Plan a 2-day visit to Tokyo", language="en")
    assert header["name"] == "2-day trip to Tokyo"
    assert "day 2: Meiji Shrine" in steps[-1]["outcome"] and "day 3" not in steps[-1]["outcome"]
