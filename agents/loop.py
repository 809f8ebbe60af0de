# Chinese texts use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""The agent loop: one run of the agent for a chat session, step by step.

A step is: read the session and its transcript, trim the transcript to the model's context
budget, build the hint fresh from the database, call the model, store its answer, then run each
tool call it asked for. The plan is never lost to trimming because the hint always carries it,
and because the hint is rebuilt before every call, edits people make on the board between two
steps change what the agent does next.

Durability. Everything the loop decides from is stored: the transcript (messages) and the step
records (`AgentStep`). A run re-delivered after its worker died starts again from that state:
tool calls of the last answer that have no stored result are executed first, an answer that
was already final is not asked for again, and a tool call that has a result is never executed
twice (effect and result commit in one transaction; a result is unique per tool-call id). No
transaction is ever held across an LLM call.

Stop conditions, checked in this order:
- cancel requested (`services.run_cancel`) -> `cancelled`, at the next step boundary; an answer
  that arrives after the cancel is discarded unexecuted.
- the model answers without tool calls -> the answer is stored, then
  - `waiting_for_user` if the session needs the user's confirmation and the agent has just
    presented a plan without starting it: there is a current, unfinished plan with at least one
    `todo` subtask, none in progress and none done (hint case 2). The user's next message
    re-queues this same run (`services.message_post`).
  - otherwise `succeeded`.
  Neither happens while the user has written something the model has not seen yet: the loop
  takes another step instead (`run_finish(unless_user_message_after=...)` checks this under the
  session lock, so no message is ever left unread).
- the step limit (`PLANBOARD_AGENT_MAX_STEPS` model calls per run) -> `failed`, with an error
  saying so; the plan keeps its progress and a new message continues the work.
- the model cannot be reached after its retries, or refuses the request -> `failed` with the
  reason.

The hint is sent as the last message of each request with the `user` role (every provider
accepts a trailing user message, where a trailing system message is not portable); it is
wrapped in `<system-hint>` tags and the system prompt tells the model that such blocks come
from the runtime, not from the person.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents import hints, llm, tools
from agents.models import AgentStep
from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import AgentRun, ChatSession, Message, State
from planboard.services import Actor

logger = logging.getLogger(__name__)

# After a model has gone this many steps without a plan tool while a subtask is in progress,
# the hint reminds it to record progress; at most NUDGES_PER_RUN times per run.
NUDGE_AFTER_STEPS = 3
NUDGES_PER_RUN = 2
# Room left for the model's answer when fitting the request into the context budget.
ANSWER_RESERVE_TOKENS = 4096
# A change log longer than this is not worth the tokens; the hint summarises the rest.
MAX_CHANGES = 200
# Languages the user may write in are detected from this many recent user messages.
LANGUAGE_SAMPLE = 20

NOT_EXECUTED = (
    "Error: this tool call was never executed because the run that requested it stopped "
    "first. Check the current plan in the hint and call the tool again if it is still needed."
)

TRIMMED_NOTE = (
    "(Earlier messages of this conversation were left out to fit the model's context. The "
    "current plan and its progress are always in the latest <system-hint>.)"
)

SYSTEM_PROMPTS = {
    "en": (
        "You are Planboard's planning agent. You help one user get complex work done by "
        "planning it as a list of subtasks and then carrying the subtasks out one at a time, "
        "using the plan tools to record every change and every result.\n"
        "The plan lives on a shared board: the user and their colleagues can add, edit, "
        "reorder or delete subtasks and change their states while you work, without telling "
        "you. Before each of your steps the runtime adds a message wrapped in <system-hint> "
        "tags. It comes from the runtime, not from the user: it shows the latest plan, what "
        "other people changed since your previous step, and what to do next. Trust it over "
        "your memory of earlier messages and over the original request.\n"
        "Guidelines: refer to subtasks by the 0-based index the hint shows; finish a subtask "
        "with a concrete outcome (what was produced, found or decided); keep the plan honest "
        "rather than pretending work was done; when a tool answers with 'Error:', read the "
        "reason and correct the call instead of repeating it; when you need a decision from "
        "the user, ask and stop. When the work is complete, finish the plan and give the user "
        "a short summary."
    ),
    "zh": (
        "你是 Planboard 的规划智能体。你帮助用户完成复杂的工作：先把工作规划成一组子任务，"
        "再逐个执行，并用计划工具记录每一次修改和每一个结果。\n"
        "计划放在一块共享看板上：在你工作的同时，用户和同事可以随时添加、编辑、调整顺序或"
        "删除子任务，也可以修改子任务状态，而且不会另行通知你。在你的每一步之前，运行时都会"
        "追加一条用 <system-hint> 标签包裹的消息。它来自运行时而不是用户：其中有最新的计划、"
        "自你上一步以来他人做出的修改，以及下一步的建议。请以它为准，而不是凭记忆或最初的请求。\n"
        "注意：用提示中显示的从 0 开始的编号指代子任务；完成子任务时写明具体结果（产出了什么、"
        "查到了什么或做了什么决定）；如实反映进度，不要假装已经完成；工具返回以 'Error:' "
        "开头的结果时，先读懂原因再修正调用，不要原样重复；需要用户决定时，提问后停下等待。"
        "全部完成后，结束计划并向用户简要总结。"
    ),
}


# --- entry point ------------------------------------------------------------------------------


def execute_run(*, run_id: int) -> AgentRun:
    """Drive a queued (or re-delivered running) run until it stops; returns the run."""
    run = services.run_start(run_id=run_id)
    if run.status != AgentRun.Status.RUNNING:
        return run  # cancelled while queued, already finished, or waiting for the user
    # Steps a dead worker left mid-call never reached the model's answer.
    AgentStep.objects.filter(run=run, status=AgentStep.Status.CALLING).update(
        status=AgentStep.Status.INTERRUPTED, finished_at=timezone.now()
    )
    try:
        return _drive(run)
    except Exception as exc:
        logger.exception("agent run %s crashed", run.pk)
        return services.run_finish(
            run_id=run.pk,
            status=AgentRun.Status.FAILED,
            error=f"The agent stopped on an internal error ({type(exc).__name__}): {exc}",
        )


def _drive(run: AgentRun) -> AgentRun:
    actor = Actor.agent(run)
    model = run.model or llm.configured_model()
    budget_factor = 1.0
    while True:
        run.refresh_from_db()
        if not run.is_active:
            return run
        if run.cancel_requested:
            return services.run_finish(run_id=run.pk, status=AgentRun.Status.CANCELLED)

        last = _last_answer(run)
        if last is not None and last.tool_calls:
            if _unanswered_calls(last):
                # A previous worker died between the answer and its tool results.
                _execute_tool_calls(run=run, actor=actor, message=last)
                continue
        elif last is not None and not _user_wrote_after(run.session_id, _seen_until(last)):
            # The final answer is stored; only the status is left to settle.
            finished = services.run_finish(
                run_id=run.pk,
                status=_status_after_answer(run.session_id),
                unless_user_message_after=_seen_until(last),
            )
            if finished.is_active:
                continue  # the user wrote in the meantime: take another step
            return finished

        if run.step_count >= settings.PLANBOARD_AGENT_MAX_STEPS:
            return services.run_finish(
                run_id=run.pk,
                status=AgentRun.Status.FAILED,
                error=(
                    f"The agent stopped after {run.step_count} steps without a final answer "
                    f"(the limit is PLANBOARD_AGENT_MAX_STEPS = "
                    f"{settings.PLANBOARD_AGENT_MAX_STEPS}). The plan keeps its progress; "
                    "send a message to let the agent continue."
                ),
            )

        request = build_request(run=run, model=model, budget_factor=budget_factor)
        step = _open_step(run=run, request=request, model=model)
        try:
            result = llm.complete(messages=request.messages, tools=tools.TOOL_SCHEMAS, model=model)
        except llm.LLMError as exc:
            _close_step(
                step, status=AgentStep.Status.FAILED, error=exc.message, attempts=exc.attempts
            )
            if exc.context_exceeded and budget_factor > 0.2:
                budget_factor /= 2  # our token estimate was too generous for this model
                continue
            return services.run_finish(
                run_id=run.pk, status=AgentRun.Status.FAILED, error=exc.message
            )

        run.refresh_from_db(fields=["cancel_requested"])
        if run.cancel_requested:
            _close_step(
                step,
                status=AgentStep.Status.DISCARDED,
                result=result,
                error="The run was cancelled while the model was answering.",
            )
            return services.run_finish(run_id=run.pk, status=AgentRun.Status.CANCELLED)

        message = _store_answer(run=run, step=step, result=result)
        if message.tool_calls:
            _execute_tool_calls(run=run, actor=actor, message=message, step=step)
        # The next iteration settles a final answer or takes the next step.


# --- the request ------------------------------------------------------------------------------


@dataclass
class StepRequest:
    """Everything one LLM call is given, plus what the step record keeps about it."""

    messages: list[dict[str, Any]]
    hint: str
    language: str
    plan_id: int | None
    plan_version: int | None
    changes: list[dict[str, Any]] = field(default_factory=list)
    nudge: bool = False
    last_message_id: int | None = None
    trimmed: int = 0
    tokens: int = 0


def build_request(*, run: AgentRun, model: str, budget_factor: float = 1.0) -> StepRequest:
    """The messages for the next LLM call: system prompt, fitted transcript, fresh hint."""
    session = ChatSession.objects.get(pk=run.session_id)
    transcript = list(Message.objects.filter(session_id=session.pk).order_by("id"))
    language = _language(session, transcript)
    snapshot = (
        selectors.plan_snapshot(plan_id=session.current_plan_id)
        if session.current_plan_id
        else None
    )
    changes = _changes_since_last_step(session=session, snapshot=snapshot)
    nudge = _should_nudge(run=run, snapshot=snapshot)
    hint = hints.build_hint(
        snapshot=snapshot,
        need_user_confirm=session.need_user_confirm,
        max_subtasks=session.max_subtasks,
        language=language,
        changes=changes,
        nudge=nudge,
    )
    system = {"role": "system", "content": SYSTEM_PROMPTS.get(language, SYSTEM_PROMPTS["en"])}
    hint_message = {"role": "user", "content": hint}

    fixed = llm.count_tokens(messages=[system, hint_message], model=model) + _tools_tokens(model)
    budget = int(llm.context_budget(model) * budget_factor)
    room = budget - fixed - min(ANSWER_RESERVE_TOKENS, budget // 4)
    blocks = _blocks(transcript)
    kept, trimmed, used = _fit(blocks, room=room, model=model)

    history = [m for block in kept for m in block.messages]
    if trimmed:
        # Says why the conversation starts mid-way, and keeps it starting with a user turn
        # (some providers require that).
        history.insert(0, {"role": "user", "content": TRIMMED_NOTE})
    messages = [system, *history, hint_message]
    return StepRequest(
        messages=messages,
        hint=hint,
        language=language,
        plan_id=snapshot["id"] if snapshot else None,
        plan_version=snapshot["version"] if snapshot else None,
        changes=changes,
        nudge=nudge,
        last_message_id=transcript[-1].pk if transcript else None,
        trimmed=trimmed,
        tokens=fixed + used,
    )


@lru_cache(maxsize=8)
def _tools_tokens(model: str) -> int:
    schemas = json.dumps(tools.TOOL_SCHEMAS, ensure_ascii=False)
    return llm.count_tokens(messages=[{"role": "system", "content": schemas}], model=model)


@dataclass
class _Block:
    """Messages that must stay together: a user message, or an answer and its tool results."""

    messages: list[dict[str, Any]]
    message_count: int


def _blocks(transcript: list[Message]) -> list[_Block]:
    """The transcript in the model's format, tool results placed right after their call.

    A user message can be stored between an answer and its tool results (the user wrote while
    the tools ran); providers require results to follow their call, so they are regrouped.
    Calls with no stored result (a run stopped before executing them) get an explanatory one.
    """
    results = {m.tool_call_id: m for m in transcript if m.role == Message.Role.TOOL}
    blocks: list[_Block] = []
    for message in transcript:
        if message.role == Message.Role.USER:
            blocks.append(_Block([{"role": "user", "content": message.content}], 1))
        elif message.role == Message.Role.ASSISTANT:
            calls = message.tool_calls or []
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if calls:
                entry["tool_calls"] = calls
            group = [entry]
            for call in calls:
                stored = results.get(call.get("id", ""))
                group.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.get("id", ""),
                        "content": stored.content if stored else NOT_EXECUTED,
                    }
                )
            blocks.append(_Block(group, 1 + sum(1 for c in calls if c.get("id") in results)))
        # Tool messages were placed with their call above.
    return blocks


def _fit(blocks: list[_Block], *, room: int, model: str) -> tuple[list[_Block], int, int]:
    """Keep the newest blocks that fit in `room` tokens (at least the newest one)."""
    kept: list[_Block] = []
    used = 0
    for block in reversed(blocks):
        size = llm.count_tokens(messages=block.messages, model=model)
        if kept and used + size > room:
            break
        kept.append(block)
        used += size
    kept.reverse()
    trimmed = sum(b.message_count for b in blocks[: len(blocks) - len(kept)])
    return kept, trimmed, used


def _language(session: ChatSession, transcript: list[Message]) -> str:
    if session.language != ChatSession.Language.AUTO:
        return session.language
    said = [m.content for m in transcript if m.role == Message.Role.USER][-LANGUAGE_SAMPLE:]
    return hints.detect_language(said)


def _changes_since_last_step(
    *, session: ChatSession, snapshot: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Plan events the agent has not seen: made by people (or other sessions' agents) since
    the plan version its previous model call was shown."""
    previous = (
        AgentStep.objects.filter(run__session_id=session.pk, status=AgentStep.Status.COMPLETED)
        .order_by("-id")
        .first()
    )
    if previous is None:
        return []  # the agent's first look: the whole plan is new to it anyway
    events: list[dict[str, Any]] = []
    current_id = snapshot["id"] if snapshot else None
    if previous.plan_id is not None:
        events += selectors.plan_events_since(
            plan_id=previous.plan_id, version=previous.plan_version or 0, limit=MAX_CHANGES
        )
    if current_id is not None and current_id != previous.plan_id:
        events += selectors.plan_events_since(plan_id=current_id, version=0, limit=MAX_CHANGES)
    own_runs = set(AgentRun.objects.filter(session_id=session.pk).values_list("id", flat=True))
    return [
        e
        for e in events
        if not (e["actor"]["kind"] == "agent" and e["actor"]["run_id"] in own_runs)
    ][-MAX_CHANGES:]


def _should_nudge(*, run: AgentRun, snapshot: dict[str, Any] | None) -> bool:
    if snapshot is None or not any(
        s["state"] == State.IN_PROGRESS for s in snapshot.get("subtasks", [])
    ):
        return False
    steps = list(
        AgentStep.objects.filter(run=run, status=AgentStep.Status.COMPLETED).order_by("-number")
    )
    if sum(1 for s in steps if s.nudged) >= NUDGES_PER_RUN:
        return False
    idle = 0
    for step in steps:
        if any(tools.is_plan_tool(name) for name in step.tool_names):
            break
        idle += 1
        if step.nudged:
            break  # count afresh from the last reminder, which itself went unheeded
    return idle >= NUDGE_AFTER_STEPS


# --- steps, answers and tool calls ------------------------------------------------------------


def _open_step(*, run: AgentRun, request: StepRequest, model: str) -> AgentStep:
    last = AgentStep.objects.filter(run=run).order_by("-number").first()
    return AgentStep.objects.create(
        run=run,
        number=(last.number + 1) if last else 1,
        model=model,
        plan_id=request.plan_id,
        plan_version=request.plan_version,
        hint=request.hint,
        changes_shown=len(request.changes),
        nudged=request.nudge,
        language=request.language,
        request_messages=len(request.messages),
        request_tokens=request.tokens,
        trimmed_messages=request.trimmed,
        last_message_id=request.last_message_id,
    )


def _close_step(
    step: AgentStep,
    *,
    status: str,
    result: llm.LLMResult | None = None,
    error: str = "",
    attempts: int | None = None,
) -> None:
    step.status = status
    step.error = error
    step.finished_at = timezone.now()
    if result is not None:
        step.response_content = result.content
        step.tool_calls = result.tool_calls
        step.attempts = result.attempts
        step.prompt_tokens = result.prompt_tokens
        step.completion_tokens = result.completion_tokens
        step.cost_usd = round(result.cost_usd, 6)
        step.llm_ms = result.duration_ms
    if attempts is not None:
        step.attempts = attempts
    step.save()


def _unique_call_ids(run: AgentRun, step: AgentStep, calls: list[dict[str, Any]]) -> None:
    """Give every tool call an id no other call of the session has.

    Results are unique per (session, tool-call id); some servers reuse ids like `call_0`
    across answers, which would make a new call look answered already.
    """
    used = set(
        Message.objects.filter(session_id=run.session_id)
        .exclude(tool_call_id="")
        .values_list("tool_call_id", flat=True)
    )
    for answer in Message.objects.filter(session_id=run.session_id).exclude(tool_calls=None):
        used.update(str(c.get("id", "")) for c in answer.tool_calls or [])
    for position, call in enumerate(calls):
        call_id = str(call.get("id") or "")
        if not call_id or call_id in used or len(call_id) > 100:
            call_id = f"call_r{run.pk}_s{step.number}_{position}"
            while call_id in used:
                call_id += "x"
        call["id"] = call_id
        used.add(call_id)


def _store_answer(*, run: AgentRun, step: AgentStep, result: llm.LLMResult) -> Message:
    """Persist the answer, count the step and complete its record, all or nothing."""
    _unique_call_ids(run, step, result.tool_calls)
    with transaction.atomic():
        message = services.message_record_agent(
            session_id=run.session_id,
            run_id=run.pk,
            role=Message.Role.ASSISTANT,
            content=result.content,
            tool_calls=result.tool_calls or None,
        )
        services.run_record_step(
            run_id=run.pk,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            cost_usd=result.cost_usd,
        )
        step.assistant_message = message
        _close_step(step, status=AgentStep.Status.COMPLETED, result=result)
    return message


def _last_answer(run: AgentRun) -> Message | None:
    return Message.objects.filter(run=run, role=Message.Role.ASSISTANT).order_by("-id").first()


def _answered_ids(session_id: int, call_ids: list[str]) -> set[str]:
    return set(
        Message.objects.filter(
            session_id=session_id, role=Message.Role.TOOL, tool_call_id__in=call_ids
        ).values_list("tool_call_id", flat=True)
    )


def _unanswered_calls(message: Message) -> list[dict[str, Any]]:
    calls = message.tool_calls or []
    answered = _answered_ids(message.session_id, [c.get("id", "") for c in calls])
    return [c for c in calls if c.get("id", "") not in answered]


def _seen_until(answer: Message) -> int:
    """The newest transcript message the model had been shown when it gave `answer`.

    A user message stored while the model was thinking is older than the answer but unread.
    """
    step = AgentStep.objects.filter(assistant_message=answer).only("last_message_id").first()
    if step is not None and step.last_message_id is not None:
        return step.last_message_id
    return answer.pk


def _user_wrote_after(session_id: int, message_id: int) -> bool:
    return Message.objects.filter(
        session_id=session_id, role=Message.Role.USER, pk__gt=message_id
    ).exists()


def _status_after_answer(session_id: int) -> str:
    """`waiting_for_user` when a plan was presented for confirmation and not started."""
    session = ChatSession.objects.get(pk=session_id)
    if not session.need_user_confirm or session.current_plan_id is None:
        return AgentRun.Status.SUCCEEDED
    snapshot = selectors.plan_snapshot(plan_id=session.current_plan_id)
    states = [s["state"] for s in snapshot["subtasks"]]
    presented = (
        snapshot["state"] not in (State.DONE, State.ABANDONED)
        and State.TODO in states
        and State.IN_PROGRESS not in states
        and State.DONE not in states
    )
    return AgentRun.Status.WAITING_FOR_USER if presented else AgentRun.Status.SUCCEEDED


def _execute_tool_calls(
    *, run: AgentRun, actor: Actor, message: Message, step: AgentStep | None = None
) -> None:
    """Run each unanswered call; its effect and its stored result commit together."""
    started = time.monotonic()
    for call in _unanswered_calls(message):
        call_id = call.get("id", "")
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        try:
            with transaction.atomic():
                result = tools.execute_tool_call(
                    session_id=run.session_id,
                    actor=actor,
                    name=name,
                    arguments=function.get("arguments"),
                )
                services.message_record_agent(
                    session_id=run.session_id,
                    run_id=run.pk,
                    role=Message.Role.TOOL,
                    content=result,
                    tool_call_id=call_id,
                    tool_name=name,
                )
        except PlanError as exc:
            if exc.code == "duplicate_tool_call":
                continue  # answered by another worker; our effect was rolled back with it
            raise
        except Exception as exc:
            # A bug or a database hiccup inside a tool: tell the model, keep the run going.
            logger.exception("tool %s failed in run %s", name, run.pk)
            services.message_record_agent(
                session_id=run.session_id,
                run_id=run.pk,
                role=Message.Role.TOOL,
                content=f"Error: the tool failed unexpectedly ({type(exc).__name__}). "
                "Nothing was changed; check the plan in the hint and try again.",
                tool_call_id=call_id,
                tool_name=name,
            )
    if step is None:
        step = AgentStep.objects.filter(assistant_message=message).first()
    if step is not None:
        ids = [c.get("id", "") for c in message.tool_calls or []]
        stored = {
            m.tool_call_id: m
            for m in Message.objects.filter(
                session_id=run.session_id, role=Message.Role.TOOL, tool_call_id__in=ids
            )
        }
        step.tool_results = [
            {"id": i, "name": stored[i].tool_name, "result": stored[i].content}
            for i in ids
            if i in stored
        ]
        step.tools_ms += int((time.monotonic() - started) * 1000)
        step.save(update_fields=["tool_results", "tools_ms"])
