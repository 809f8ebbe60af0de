"""The agent loop, driven through litellm's real code path by the scripted model."""

from __future__ import annotations

from typing import Any

import pytest

from agents import hints, loop, prompts, tools
from agents.models import AgentStep
from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Message, PlanEvent, State
from planboard.services import Actor
from tests.support.env import DISPATCHED
from tests.support.runs import drive, post
from tests.support.scripted import ScriptedModel, call, do, error, say, tool_calls

SUBTASKS = [
    {"name": "Book flights", "description": "Find flights", "expected_outcome": "Tickets"},
    {"name": "Book hotel", "description": "Near Gion", "expected_outcome": "Reservation"},
    {"name": "Plan days", "description": "Temples", "expected_outcome": "Day plans"},
]


def create_plan_call(call_id: str | None = None) -> dict[str, Any]:
    return call(
        "create_plan",
        call_id=call_id,
        name="Kyoto trip",
        description="Three days in Kyoto",
        expected_outcome="An itinerary",
        subtasks=SUBTASKS,
    )


def tool_results(session: ChatSession) -> list[Message]:
    return list(Message.objects.filter(session=session, role=Message.Role.TOOL).order_by("id"))


# --- a whole run ------------------------------------------------------------------------------


def test_full_run_plans_executes_and_finishes(session, user, scripted_model: ScriptedModel):
    scripted_model.script.extend(
        [
            tool_calls(create_plan_call()),
            tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress")),
            tool_calls(call("finish_subtask", subtask_idx=0, subtask_outcome="Flights booked")),
            tool_calls(call("finish_subtask", subtask_idx=1, subtask_outcome="Hotel booked")),
            tool_calls(call("finish_subtask", subtask_idx=2, subtask_outcome="Days planned")),
            tool_calls(call("finish_plan", state="done", outcome="Trip ready")),
            say("Your Kyoto trip is ready."),
        ]
    )
    run = drive(post(session, user, "Plan a three-day trip to Kyoto"))

    assert run.status == AgentRun.Status.SUCCEEDED
    assert run.error == ""
    assert run.started_at is not None and run.finished_at is not None
    assert run.step_count == 7
    assert run.prompt_tokens == 700
    plan = selectors.historical_plans(owner=user).get()
    assert plan.state == State.DONE
    assert [s.outcome for s in plan.subtasks.order_by("position")] == [
        "Flights booked",
        "Hotel booked",
        "Days planned",
    ]
    # The transcript: the user's message, seven answers, six tool results, the final text.
    roles = list(
        Message.objects.filter(session=session).order_by("id").values_list("role", flat=True)
    )
    assert roles == ["user"] + ["assistant", "tool"] * 6 + ["assistant"]
    final = Message.objects.filter(session=session).order_by("id").last()
    assert final.content == "Your Kyoto trip is ready." and final.run_id == run.pk
    assert not any(r.content.startswith("Error:") for r in tool_results(session))
    # Every request offers the ten plan tools (and the session's workspace); the hint is the
    # last, ephemeral message.
    plan_tools = {t["function"]["name"] for t in tools.TOOL_SCHEMAS}
    for offered in scripted_model.tools:
        names = {t["function"]["name"] for t in offered or []}
        assert names >= plan_tools
        assert all(n.startswith("workspace__") for n in names - plan_tools)
    assert all(r[0]["role"] == "system" for r in scripted_model.requests)
    assert all(r[-1]["content"].startswith("<system-hint>") for r in scripted_model.requests)
    assert not Message.objects.filter(content__contains="<system-hint>").exists()
    # Every step is recorded for review.
    steps = list(AgentStep.objects.filter(run=run).order_by("number"))
    assert [s.number for s in steps] == list(range(1, 8))
    assert all(s.status == AgentStep.Status.COMPLETED for s in steps)
    assert steps[0].tool_names == ["create_plan"]
    assert steps[0].tool_results[0]["name"] == "create_plan"
    assert steps[0].request_messages == 3 and steps[0].request_tokens > 0
    assert steps[0].plan_id is None and steps[1].plan_id == plan.pk
    assert steps[-1].response_content == "Your Kyoto trip is ready."
    assert steps[0].hint == scripted_model.hint(0)


def test_hint_is_rebuilt_from_the_database_before_every_call(
    session, user, other_user, scripted_model: ScriptedModel
):
    """A person edits the plan while the model is thinking; the next hint shows it."""
    edits: dict[str, Any] = {}
    alice = Actor.person(user)

    def people_edit(_messages: list[dict[str, Any]]) -> None:
        plan_id = ChatSession.objects.get(pk=session.pk).current_plan_id
        snapshot = selectors.plan_snapshot(plan_id=plan_id)
        edits["added"] = services.subtask_add(
            plan_id=plan_id, actor=alice, name="Day trip to Nara", index=1
        )
        services.subtask_update(
            plan_id=plan_id,
            actor=alice,
            subtask_id=snapshot["subtasks"][2]["id"],
            name="Plan temple days",
        )

    scripted_model.script.extend(
        [
            tool_calls(create_plan_call()),
            do(people_edit),
            tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress")),
            say("Started."),
        ]
    )
    run = drive(post(session, user, "Plan a three-day trip to Kyoto"))
    assert run.status == AgentRun.Status.SUCCEEDED

    first, second, third = (scripted_model.hint(i) for i in range(3))
    assert "create_plan" in first and "# " not in first  # no plan yet
    # The plan the agent itself created: shown, but not listed as a change by others.
    assert "- [ ] 1. Book hotel" in second
    assert "changed since your last step" not in second
    assert "Day trip to Nara" not in second
    # Made during the second call: the third request shows the new order and the change log.
    assert "- [ ] [WIP] 0. Book flights" in third
    assert "- [ ] 1. Day trip to Nara" in third
    assert "- [ ] 2. Book hotel" in third
    assert "- [ ] 3. Plan temple days" in third
    assert "What changed since your last step" in third
    assert "alice added subtask 1 'Day trip to Nara'" in third
    assert "alice edited subtask 3 'Plan temple days'" in third
    # The agent's own update_subtask_state is not reported back to it as someone's change.
    assert "the agent" not in third.split("What changed since your last step")[1].split("\n\n")[0]
    steps = list(AgentStep.objects.filter(run=run).order_by("number"))
    assert [s.changes_shown for s in steps] == [0, 0, 2]
    assert steps[2].plan_version > steps[1].plan_version


def test_changes_made_between_runs_are_reported(session, user, scripted_model: ScriptedModel):
    scripted_model.script.extend([tool_calls(create_plan_call()), say("Plan made.")])
    drive(post(session, user, "Plan a trip"))
    plan_id = ChatSession.objects.get(pk=session.pk).current_plan_id
    snapshot = selectors.plan_snapshot(plan_id=plan_id)
    services.subtask_delete(
        plan_id=plan_id, actor=Actor.person(user), subtask_id=snapshot["subtasks"][1]["id"]
    )
    scripted_model.script.append(say("Noted."))
    drive(post(session, user, "I removed the hotel step"))
    hint = scripted_model.hint()
    assert "alice deleted subtask 'Book hotel' (it was at index 1)" in hint
    assert "- [ ] 1. Plan days" in hint


# --- bad tool calls ---------------------------------------------------------------------------


def test_bad_tool_calls_return_errors_and_the_run_continues(
    session, user, scripted_model: ScriptedModel
):
    scripted_model.script.extend(
        [
            tool_calls(
                call("finish_subtask", subtask_idx=7, subtask_outcome="x"),
                call("search_the_web", query="Kyoto"),
                call("create_plan", raw='{"name": "Trip", "subtasks": [oops'),
                call("update_subtask_state", subtask_idx=0),
            ),
            say("Sorry, let me answer directly."),
        ]
    )
    run = drive(post(session, user, "Plan a trip"))

    assert run.status == AgentRun.Status.SUCCEEDED
    results = tool_results(session)
    assert len(results) == 4
    assert all(r.content.startswith("Error: ") for r in results)
    assert [r.tool_name for r in results] == [
        "finish_subtask",
        "search_the_web",
        "create_plan",
        "update_subtask_state",
    ]
    # Nothing changed, and the model saw every error before answering.
    assert ChatSession.objects.get(pk=session.pk).current_plan_id is None
    assert not PlanEvent.objects.exists()
    second = scripted_model.requests[1]
    assert [m["role"] for m in second[2:7]] == ["assistant", "tool", "tool", "tool", "tool"]
    assert all(m["content"].startswith("Error: ") for m in second[3:7])


def test_an_unexpected_tool_failure_becomes_an_error_result(
    session, user, scripted_model: ScriptedModel, monkeypatch
):
    real = tools.execute_tool_call

    def flaky(**kwargs: Any) -> str:
        if kwargs["name"] == "get_subtask_count":
            raise RuntimeError("disk on fire")
        return real(**kwargs)

    monkeypatch.setattr(tools, "execute_tool_call", flaky)
    scripted_model.script.extend(
        [tool_calls(call("get_subtask_count"), create_plan_call()), say("Planned.")]
    )
    run = drive(post(session, user, "Plan a trip"))

    assert run.status == AgentRun.Status.SUCCEEDED
    first, second = tool_results(session)
    assert first.content.startswith("Error: the tool failed unexpectedly (RuntimeError)")
    assert not second.content.startswith("Error")
    assert ChatSession.objects.get(pk=session.pk).current_plan_id is not None


def test_reused_tool_call_ids_are_made_unique(session, user, scripted_model: ScriptedModel):
    """Some servers number calls `call_0` in every answer; each must still be executed."""
    scripted_model.script.extend(
        [
            tool_calls(create_plan_call(call_id="call_0")),
            tool_calls(
                call("update_subtask_state", call_id="call_0", subtask_idx=0, state="in_progress")
            ),
            say("Started."),
        ]
    )
    run = drive(post(session, user, "Plan a trip"))

    assert run.status == AgentRun.Status.SUCCEEDED
    results = tool_results(session)
    assert len(results) == 2 and len({r.tool_call_id for r in results}) == 2
    assert not any(r.content.startswith("Error") for r in results)
    plan_id = ChatSession.objects.get(pk=session.pk).current_plan_id
    assert selectors.plan_snapshot(plan_id=plan_id)["subtasks"][0]["state"] == State.IN_PROGRESS
    # The model is shown the ids that were stored, so calls and results stay paired.
    last = scripted_model.requests[-1]
    answer_ids = [c["id"] for m in last if m["role"] == "assistant" for c in m["tool_calls"]]
    assert answer_ids == [r.tool_call_id for r in results]


# --- retries and failures of the model --------------------------------------------------------


def test_transient_errors_are_retried(session, user, scripted_model: ScriptedModel):
    scripted_model.script.extend([error("rate_limit"), error("timeout"), say("Hello!")])
    run = drive(post(session, user, "Hi there"))

    assert run.status == AgentRun.Status.SUCCEEDED
    assert len(scripted_model.requests) == 3
    step = AgentStep.objects.get(run=run)
    assert step.attempts == 3 and step.status == AgentStep.Status.COMPLETED
    assert run.step_count == 1


def test_connection_errors_fail_the_run_after_three_attempts(
    session, user, scripted_model: ScriptedModel
):
    scripted_model.script.extend([error("connection", "no route to host")] * 3)
    run = drive(post(session, user, "Hi there"))

    assert run.status == AgentRun.Status.FAILED
    assert "could not be reached after 3 attempts" in run.error
    assert "no route to host" in run.error
    assert len(scripted_model.requests) == 3
    assert not Message.objects.filter(session=session, role=Message.Role.ASSISTANT).exists()
    step = AgentStep.objects.get(run=run)
    assert step.status == AgentStep.Status.FAILED and step.error == run.error
    assert run.step_count == 0


def test_a_refused_request_fails_at_once(session, user, scripted_model: ScriptedModel):
    scripted_model.script.extend([error("auth", "invalid api key")])
    run = drive(post(session, user, "Hi there"))

    assert run.status == AgentRun.Status.FAILED
    assert "refused the request" in run.error and "invalid api key" in run.error
    assert len(scripted_model.requests) == 1


def test_step_limit_fails_the_run_with_a_readable_error(
    session, user, settings, scripted_model: ScriptedModel
):
    settings.PLANBOARD_AGENT_MAX_STEPS = 3
    scripted_model.script.extend([tool_calls(call("get_subtask_count"))] * 5)
    run = drive(post(session, user, "Count forever"))

    assert run.status == AgentRun.Status.FAILED
    assert "after 3 steps" in run.error and "PLANBOARD_AGENT_MAX_STEPS" in run.error
    assert run.step_count == 3
    assert len(scripted_model.requests) == 3
    # The last step's tool call was still executed: no dangling call.
    assert len(tool_results(session)) == 3


# --- cancel -----------------------------------------------------------------------------------


def test_cancel_while_the_model_thinks_discards_its_answer(
    session, user, scripted_model: ScriptedModel
):
    scripted_model.script.extend(
        [
            do(lambda _m: services.run_cancel(session_id=session.pk)),
            tool_calls(create_plan_call()),
        ]
    )
    run = drive(post(session, user, "Plan a trip"))

    assert run.status == AgentRun.Status.CANCELLED
    assert run.finished_at is not None
    assert ChatSession.objects.get(pk=session.pk).current_plan_id is None
    assert not Message.objects.filter(session=session, role=Message.Role.ASSISTANT).exists()
    assert AgentStep.objects.get(run=run).status == AgentStep.Status.DISCARDED


def test_a_cancel_landing_while_the_answer_is_stored_discards_it(
    session, user, scripted_model: ScriptedModel, monkeypatch
):
    """The cancel check and the answer's write are one transaction: a cancel that lands after
    the model answered but before the answer is counted still wins."""
    real = services.message_record_agent

    def record_then_cancel(**kwargs: Any) -> Message:
        message = real(**kwargs)
        if kwargs["role"] == Message.Role.ASSISTANT:
            AgentRun.objects.filter(session=session).update(cancel_requested=True)
        return message

    monkeypatch.setattr(services, "message_record_agent", record_then_cancel)
    scripted_model.script.append(tool_calls(create_plan_call()))
    run = drive(post(session, user, "Plan a trip"))

    assert run.status == AgentRun.Status.CANCELLED
    assert not Message.objects.filter(session=session, role=Message.Role.ASSISTANT).exists()
    assert ChatSession.objects.get(pk=session.pk).current_plan_id is None  # never executed
    step = AgentStep.objects.get(run=run)
    assert step.status == AgentStep.Status.DISCARDED and step.assistant_message_id is None
    assert run.step_count == 0  # the discarded answer is not counted either


def test_cancel_between_steps_stops_before_the_next_call(
    session, user, scripted_model: ScriptedModel, monkeypatch
):
    real = tools.execute_tool_call

    def cancel_after(**kwargs: Any) -> str:
        result = real(**kwargs)
        services.run_cancel(session_id=session.pk)
        return result

    monkeypatch.setattr(tools, "execute_tool_call", cancel_after)
    scripted_model.script.extend([tool_calls(create_plan_call()), say("never asked")])
    run = drive(post(session, user, "Plan a trip"))

    assert run.status == AgentRun.Status.CANCELLED
    assert len(scripted_model.requests) == 1
    assert len(tool_results(session)) == 1  # the call that was running completed with its result


def test_a_run_cancelled_while_queued_never_calls_the_model(
    session, user, scripted_model: ScriptedModel
):
    run = post(session, user, "Plan a trip")
    services.run_cancel(session_id=session.pk)
    run = drive(run)

    assert run.status == AgentRun.Status.CANCELLED
    assert scripted_model.requests == []


# --- confirmation and user messages -------------------------------------------------------------


def test_confirmation_pauses_the_run_and_the_next_message_resumes_it(
    user, scripted_model: ScriptedModel, django_capture_on_commit_callbacks
):
    session = services.session_create(owner=user, need_user_confirm=True)
    scripted_model.script.extend(
        [tool_calls(create_plan_call()), say("Here is the plan. Shall I start?")]
    )
    run = drive(post(session, user, "Plan a three-day trip to Kyoto"))

    assert run.status == AgentRun.Status.WAITING_FOR_USER
    assert run.finished_at is None
    assert "Confirmation:" in scripted_model.hint(1)  # the hint asked for the go-ahead

    DISPATCHED.clear()
    with django_capture_on_commit_callbacks(execute=True):
        _, resumed = services.message_post(session_id=session.pk, author=user, content="Go ahead")
    assert resumed.pk == run.pk and resumed.status == AgentRun.Status.QUEUED
    assert DISPATCHED == [run.pk]  # the same run is dispatched again

    scripted_model.script.extend(
        [
            tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress")),
            say("Working on the flights."),
        ]
    )
    run = drive(resumed)
    assert run.status == AgentRun.Status.SUCCEEDED
    resumed_request = scripted_model.requests[2]
    assert resumed_request[-2] == {"role": "user", "content": "Go ahead"}
    assert run.step_count == 4


def test_a_plan_already_started_does_not_wait(user, scripted_model: ScriptedModel):
    session = services.session_create(owner=user, need_user_confirm=True)
    scripted_model.script.extend(
        [
            tool_calls(
                create_plan_call(),
                call("update_subtask_state", subtask_idx=0, state="in_progress"),
            ),
            say("You asked me to go ahead, so I started."),
        ]
    )
    run = drive(post(session, user, "Plan and book a trip to Kyoto right away"))
    assert run.status == AgentRun.Status.SUCCEEDED


def test_a_plain_answer_without_a_plan_succeeds(user, scripted_model: ScriptedModel):
    session = services.session_create(owner=user, need_user_confirm=True)
    scripted_model.script.append(say("Kyoto is in Japan."))
    run = drive(post(session, user, "Where is Kyoto?"))
    assert run.status == AgentRun.Status.SUCCEEDED


def test_a_message_sent_during_a_run_is_seen_at_the_next_step(
    session, user, scripted_model: ScriptedModel
):
    def user_writes(_messages: list[dict[str, Any]]) -> None:
        _, same_run = services.message_post(
            session_id=session.pk, author=user, content="Also add a tea ceremony"
        )
        assert same_run.status == AgentRun.Status.RUNNING  # fed to the active run

    scripted_model.script.extend([do(user_writes), tool_calls(create_plan_call()), say("Added.")])
    run = drive(post(session, user, "Plan a trip"))

    assert run.status == AgentRun.Status.SUCCEEDED
    assert {"role": "user", "content": "Also add a tea ceremony"} in scripted_model.requests[1]
    assert AgentRun.objects.filter(session=session).count() == 1


def test_a_message_sent_while_the_final_answer_is_written_is_not_lost(
    session, user, scripted_model: ScriptedModel
):
    scripted_model.script.extend(
        [
            do(
                lambda _m: services.message_post(
                    session_id=session.pk, author=user, content="Wait, one more thing"
                )
            ),
            say("Here you go."),
            say("Sure, what is it?"),
        ]
    )
    run = drive(post(session, user, "Hello agent"))

    assert run.status == AgentRun.Status.SUCCEEDED
    assert len(scripted_model.requests) == 2
    assert {"role": "user", "content": "Wait, one more thing"} in scripted_model.requests[1]
    final = Message.objects.filter(session=session).order_by("id").last()
    assert final.content == "Sure, what is it?"


# --- durability -------------------------------------------------------------------------------


def _simulate_dead_worker(run: AgentRun, calls: list[dict[str, Any]]) -> Message:
    """What a worker leaves behind when it dies after storing an answer: a running run."""
    run = services.run_start(run_id=run.pk)
    services.run_record_step(run_id=run.pk)
    return services.message_record_agent(
        session_id=run.session_id, run_id=run.pk, role="assistant", tool_calls=calls
    )


def test_a_redelivered_run_finishes_pending_tool_calls_without_repeating_any(
    session, user, scripted_model: ScriptedModel
):
    run = post(session, user, "Plan a trip")
    plan_call = create_plan_call()
    start_call = call("update_subtask_state", subtask_idx=0, state="in_progress")
    _simulate_dead_worker(run, [plan_call, start_call])
    # The first call had run (effect and result committed together) before the worker died.
    with django_atomic():
        result = tools.execute_tool_call(
            session_id=session.pk,
            actor=Actor.agent(run),
            name="create_plan",
            arguments=plan_call["function"]["arguments"],
        )
        services.message_record_agent(
            session_id=session.pk,
            run_id=run.pk,
            role="tool",
            content=result,
            tool_call_id=plan_call["id"],
            tool_name="create_plan",
        )

    scripted_model.script.append(say("Started on the flights."))
    run = drive(run)

    assert run.status == AgentRun.Status.SUCCEEDED
    assert PlanEvent.objects.filter(action="plan_created").count() == 1
    assert PlanEvent.objects.filter(action="subtask_state_changed").count() == 1
    assert [r.tool_call_id for r in tool_results(session)] == [plan_call["id"], start_call["id"]]
    # The model was asked only after the pending call was done, and saw both results.
    assert len(scripted_model.requests) == 1
    assert scripted_model.roles(0) == ["system", "user", "assistant", "tool", "tool", "user"]


def test_a_redelivered_run_whose_final_answer_was_stored_just_finishes(
    session, user, scripted_model: ScriptedModel
):
    run = post(session, user, "Hello")
    run = services.run_start(run_id=run.pk)
    services.message_record_agent(
        session_id=session.pk, run_id=run.pk, role="assistant", content="Hi!"
    )
    run = drive(run)

    assert run.status == AgentRun.Status.SUCCEEDED
    assert scripted_model.requests == []  # the model is not asked twice
    assert Message.objects.filter(role=Message.Role.ASSISTANT).count() == 1


def test_a_step_interrupted_mid_call_is_marked_and_redone(
    session, user, scripted_model: ScriptedModel
):
    run = services.run_start(run_id=post(session, user, "Hello").pk)
    AgentStep.objects.create(run=run, number=1, hint="(lost)")
    scripted_model.script.append(say("Hi!"))
    run = drive(run)

    assert run.status == AgentRun.Status.SUCCEEDED
    steps = list(AgentStep.objects.filter(run=run).order_by("number"))
    assert [(s.number, s.status) for s in steps] == [
        (1, AgentStep.Status.INTERRUPTED),
        (2, AgentStep.Status.COMPLETED),
    ]


def test_a_finished_run_delivered_again_does_nothing(session, user, scripted_model: ScriptedModel):
    scripted_model.script.append(say("Hi!"))
    run = drive(post(session, user, "Hello"))
    again = drive(run)
    assert again.status == AgentRun.Status.SUCCEEDED
    assert len(scripted_model.requests) == 1


def test_an_unknown_run_is_a_plan_error(db):
    from planboard.exceptions import PlanError

    with pytest.raises(PlanError, match="does not exist"):
        loop.execute_run(run_id=424242)


def django_atomic():
    from django.db import transaction

    return transaction.atomic()


# --- the request: history, trimming, language, nudges -------------------------------------------


def test_results_are_placed_after_their_call_even_if_the_user_wrote_in_between(
    session, user, scripted_model: ScriptedModel
):
    run = services.run_start(run_id=post(session, user, "Plan a trip").pk)
    first = call("get_subtask_count")
    services.message_record_agent(
        session_id=session.pk, run_id=run.pk, role="assistant", tool_calls=[first]
    )
    services.message_post(session_id=session.pk, author=user, content="Hurry up")
    services.message_record_agent(
        session_id=session.pk,
        run_id=run.pk,
        role="tool",
        content="No current plan.",
        tool_call_id=first["id"],
        tool_name="get_subtask_count",
    )
    scripted_model.script.append(say("OK"))
    drive(run)

    assert scripted_model.roles(0) == ["system", "user", "assistant", "tool", "user", "user"]
    assert scripted_model.requests[0][4]["content"] == "Hurry up"


def test_calls_left_unexecuted_by_an_old_run_get_an_explanatory_result(
    session, user, scripted_model: ScriptedModel
):
    old = services.run_start(run_id=post(session, user, "Plan a trip").pk)
    services.message_record_agent(
        session_id=session.pk, run_id=old.pk, role="assistant", tool_calls=[call("view_subtasks")]
    )
    services.run_finish(run_id=old.pk, status="failed", error="crashed")
    scripted_model.script.append(say("OK"))
    drive(post(session, user, "Try again"))

    request = scripted_model.requests[0]
    assert request[3]["role"] == "tool" and request[3]["content"] == prompts.NOT_EXECUTED


def test_history_is_trimmed_to_the_context_budget_but_the_plan_stays_in_the_hint(
    session, user, settings, scripted_model: ScriptedModel
):
    scripted_model.script.extend([tool_calls(create_plan_call()), say("Planned.")])
    drive(post(session, user, "Plan a trip " + "with many details " * 200))
    for n in range(6):
        scripted_model.script.append(say(f"Answer {n} " + "blah " * 300))
        drive(post(session, user, f"Question {n} " + "more words " * 300))

    settings.PLANBOARD_LLM_CONTEXT_TOKENS = 6000
    scripted_model.script.append(say("Short answer"))
    run = drive(post(session, user, "Latest question"))

    request = scripted_model.requests[-1]
    step = AgentStep.objects.get(run=run)
    assert step.trimmed_messages > 0
    assert len(request) < Message.objects.filter(session=session).count()
    assert request[0]["role"] == "system"
    assert request[1] == {"role": "user", "content": prompts.TRIMMED_NOTE}
    assert request[-2] == {"role": "user", "content": "Latest question"}
    assert "# Kyoto trip" in request[-1]["content"]  # the plan survives trimming
    # No tool result is left without the answer that asked for it.
    for position, message in enumerate(request):
        if message["role"] == "tool":
            owner = next(m for m in reversed(request[:position]) if m["role"] != "tool")
            assert message["tool_call_id"] in [c["id"] for c in owner.get("tool_calls", [])]
    assert step.request_tokens <= 6000


def test_the_newest_messages_are_kept_even_when_nothing_fits(
    session, user, settings, scripted_model: ScriptedModel
):
    settings.PLANBOARD_LLM_CONTEXT_TOKENS = 10
    scripted_model.script.append(say("OK"))
    run = drive(post(session, user, "A long question " * 50))
    assert run.status == AgentRun.Status.SUCCEEDED
    assert scripted_model.requests[0][1]["content"].startswith("A long question")


def test_chinese_sessions_get_chinese_prompts_and_hints(user, scripted_model: ScriptedModel):
    session = services.session_create(owner=user, need_user_confirm=False)
    scripted_model.script.append(say("好的"))
    run = drive(post(session, user, "帮我规划一次三天的京都旅行"))
    assert scripted_model.requests[0][0]["content"] == prompts.SYSTEM_PROMPTS["zh"]
    assert "当前会话还没有计划" in scripted_model.hint(0)
    assert AgentStep.objects.get(run=run).language == "zh"


def test_the_session_language_setting_wins_over_detection(user, scripted_model: ScriptedModel):
    session = services.session_create(owner=user, need_user_confirm=False, language="zh")
    scripted_model.script.append(say("OK"))
    drive(post(session, user, "Plan a trip to Kyoto please"))
    assert scripted_model.requests[0][0]["content"] == prompts.SYSTEM_PROMPTS["zh"]


def _nudge_text() -> str:
    """The paragraph a nudge adds to a hint, whatever its wording."""

    def paragraphs(hint: str) -> list[str]:
        body = hint.removeprefix("<system-hint>\n").removesuffix("\n</system-hint>")
        return body.split("\n\n")

    common = {"snapshot": None, "need_user_confirm": False, "max_subtasks": None, "language": "en"}
    plain = paragraphs(hints.build_hint(**common))
    (extra,) = [p for p in paragraphs(hints.build_hint(**common, nudge=True)) if p not in plain]
    return extra


def test_nudge_after_three_steps_without_a_plan_tool_at_most_twice(
    user, plan, scripted_model: ScriptedModel
):
    alice = Actor.person(user)
    first = selectors.plan_snapshot(plan_id=plan.pk)["subtasks"][0]
    services.subtask_set_state(
        plan_id=plan.pk, actor=alice, subtask_id=first["id"], state="in_progress"
    )
    session = ChatSession.objects.get(pk=plan.session_id)
    session.need_user_confirm = False
    session.save()
    scripted_model.script.extend([tool_calls(call("search_the_web", query="x"))] * 11)
    scripted_model.script.append(say("Done searching."))
    run = drive(post(session, user, "Research the flights"))

    assert run.status == AgentRun.Status.SUCCEEDED
    nudged = list(
        AgentStep.objects.filter(run=run).order_by("number").values_list("nudged", flat=True)
    )
    # Steps 4 and 7 follow three steps without a plan tool; never a third time.
    assert [n for n, flag in enumerate(nudged, start=1) if flag] == [4, 7]
    text = _nudge_text()
    assert [text in scripted_model.hint(i) for i in range(12)] == [
        n in (4, 7) for n in range(1, 13)
    ]


def test_no_nudge_when_the_agent_keeps_the_plan_updated(user, plan, scripted_model: ScriptedModel):
    session = ChatSession.objects.get(pk=plan.session_id)
    scripted_model.script.extend(
        [
            tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress")),
            tool_calls(call("search_the_web")),
            tool_calls(call("search_the_web")),
            tool_calls(call("view_subtasks", subtask_idx=[0])),
            tool_calls(call("search_the_web")),
            tool_calls(call("search_the_web")),
            say("Still working."),
        ]
    )
    run = drive(post(session, user, "Go"))
    assert not AgentStep.objects.filter(run=run, nudged=True).exists()


def test_the_model_is_never_called_inside_a_transaction(
    transactional_db, user, scripted_model: ScriptedModel
):
    session = services.session_create(owner=user, need_user_confirm=False)
    scripted_model.script.extend(
        [
            tool_calls(create_plan_call()),
            tool_calls(call("update_subtask_state", subtask_idx=0, state="in_progress")),
            say("Started."),
        ]
    )
    run = drive(post(session, user, "Plan a trip"))
    assert run.status == AgentRun.Status.SUCCEEDED
    assert scripted_model.in_transaction == [False, False, False]
