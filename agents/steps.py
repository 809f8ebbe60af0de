"""Step records: one `AgentStep` row per LLM call, opened before the call and closed after,
plus storing the model's answer together with its step (all or nothing). The only module that
writes `AgentStep` rows (tests/system/test_architecture.py).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from agents import llm
from agents.context import MAX_CHANGES, StepRequest
from agents.memory import RunMemory
from agents.models import AgentStep
from agents.plan_view import ShownPlan
from planboard import broadcast, services
from planboard.models import AgentRun, Message
from planboard.pgtext import without_nul

# --- steps, answers and tool calls ------------------------------------------------------------


def open_step(*, run: AgentRun, request: StepRequest, number: int | None = None) -> AgentStep:
    """The record of the model call about to be made (`number`: the run's next step number,
    when the caller knows it)."""
    if number is None:
        last = AgentStep.objects.filter(run=run).order_by("-number").first()
        number = (last.number + 1) if last else 1
    step = AgentStep(
        run=run,
        number=number,
        model=request.model,
        profile=request.acting.name,
        subtask_id=request.subtask_id,
        plan_id=request.plan_id,
        plan_version=request.plan_version,
        hint=request.hint,
        shown_plan=request.shown_plan,
        changes_shown=len(request.changes),
        nudged=request.nudge,
        language=request.language,
        request_messages=len(request.messages),
        request_tokens=request.tokens,
        trimmed_messages=request.trimmed,
        last_message_id=request.last_message_id,
    )
    step.save(force_insert=True)
    return step


def interrupt_unfinished_steps(run: AgentRun) -> None:
    """Steps a dead worker left mid-call never reached the model's answer."""
    AgentStep.objects.filter(run=run, status=AgentStep.Status.CALLING).update(
        status=AgentStep.Status.INTERRUPTED, finished_at=timezone.now()
    )


CLOSING_FIELDS = [
    "status",
    "error",
    "finished_at",
    "response_content",
    "tool_calls",
    "attempts",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "llm_ms",
    "assistant_message",
]


def close_step(
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
        step.response_content = without_nul(result.content)
        step.tool_calls = without_nul(result.tool_calls)
        step.attempts = result.attempts
        step.prompt_tokens = result.prompt_tokens
        step.completion_tokens = result.completion_tokens
        step.cost_usd = round(result.cost_usd, 6)
        step.llm_ms = result.duration_ms
    if attempts is not None:
        step.attempts = attempts
    # Only what closing changes: the hint and shown plan written at opening stay as they are.
    step.save(update_fields=CLOSING_FIELDS)


def step_of_answer(answer: Message) -> AgentStep | None:
    return AgentStep.objects.filter(assistant_message=answer).first()


def unanswered_calls(answer: Message) -> list[dict[str, Any]]:
    """The answer's tool calls that have no stored result (yet)."""
    calls = answer.tool_calls or []
    answered = set(
        Message.objects.filter(
            session_id=answer.session_id,
            role=Message.Role.TOOL,
            tool_call_id__in=[c.get("id", "") for c in calls],
        ).values_list("tool_call_id", flat=True)
    )
    return [c for c in calls if c.get("id", "") not in answered]


def record_tool_results(
    step: AgentStep,
    answer: Message,
    stored: dict[str, tuple[str, str]] | None,
    *,
    ms: int,
    shown: ShownPlan | None = None,
) -> None:
    """The step's record of its answer's tool results in the calls' order (`stored`: {call id:
    (tool name, result)}; None reads every result stored, by any worker), `ms` more spent on
    tools, and the plan as the model now saw it when a result changed that (`shown`)."""
    ids = [c.get("id", "") for c in answer.tool_calls or []]
    if stored is None:
        found = Message.objects.filter(
            session_id=answer.session_id, role=Message.Role.TOOL, tool_call_id__in=ids
        )
        stored = {m.tool_call_id: (m.tool_name, m.content) for m in found}
    step.tool_results = [
        {"id": i, "name": stored[i][0], "result": stored[i][1]} for i in ids if i in stored
    ]
    step.tools_ms += ms
    changed = ["tool_results", "tools_ms"]
    if shown is not None and shown.changed:
        step.shown_plan = shown.to_json()
        shown.changed = False
        changed.append("shown_plan")
    step.save(update_fields=changed)


def unique_call_ids(
    run: AgentRun, step: AgentStep, calls: list[dict[str, Any]], used: set[str]
) -> None:
    """Give every tool call an id no other call of the session has (`used`: the ids the
    session's transcript holds, as read for the step's request).

    Results are unique per (session, tool-call id); some servers reuse ids like `call_0`
    across answers, which would make a new call look answered already.
    """
    used = set(used)
    for position, call in enumerate(calls):
        call_id = str(call.get("id") or "")
        if not call_id or call_id in used or len(call_id) > 100:
            call_id = f"call_r{run.pk}_s{step.number}_{position}"
            while call_id in used:
                call_id += "x"
        call["id"] = call_id
        used.add(call_id)


class AnswerSuperseded(Exception):
    """The run was cancelled, or another worker took it over, while the model answered: the
    answer is not stored (`store_answer` rolled it back)."""

    def __init__(self, flags: services.RunStopFlags | None) -> None:
        super().__init__("the answer no longer counts")
        self.flags = flags

    def taken_over(self, worker: str) -> bool:
        return self.flags is None or self.flags.lease_owner != worker


def store_answer(
    *,
    run: AgentRun,
    step: AgentStep,
    result: llm.LLMResult,
    request: StepRequest,
    answer_id: str = "",
    worker: str | None = None,
) -> Message:
    """Persist the answer, count the step and complete its record, all or nothing.

    With `worker` (the one driving the run), the answer counts only while the run is not
    cancelled and that worker still holds its lease; both are read in the same transaction,
    from the statement that counts the step, so no cancel can slip in between the check and
    the write. Otherwise nothing is stored and `AnswerSuperseded` says why.
    """
    unique_call_ids(run, step, result.tool_calls, request.used_call_ids)
    try:
        # The commit's events (the answer, usage totals) leave in one round trip.
        with broadcast.batched(), transaction.atomic():
            message = services.message_record_agent(
                session_id=run.session_id,
                run_id=run.pk,
                role=Message.Role.ASSISTANT,
                content=result.content,
                tool_calls=result.tool_calls or None,
                answer_id=answer_id,
            )
            flags = services.run_record_step(
                run_id=run.pk,
                session_id=run.session_id,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                cost_usd=result.cost_usd,
                plan_id=request.plan_id,
                subtask_id=request.subtask_id,
                profile_id=request.acting.profile_id,
                user_id=request.session.owner_id if request.session is not None else None,
                returning_flags=worker is not None,
            )
            if worker is not None and (
                flags is None or flags.cancel_requested or flags.lease_owner != worker
            ):
                raise AnswerSuperseded(flags)  # rolls the answer and its counting back
            step.assistant_message = message
            close_step(step, status=AgentStep.Status.COMPLETED, result=result)
    except AnswerSuperseded:
        step.assistant_message = None
        raise
    return message


def seen_until(answer: Message) -> int:
    """The newest transcript message the model had been shown when it gave `answer`.

    A user message stored while the model was thinking is older than the answer but unread.
    """
    step = AgentStep.objects.filter(assistant_message=answer).only("last_message_id").first()
    if step is not None and step.last_message_id is not None:
        return step.last_message_id
    return answer.pk


def mark_messages_seen(
    *, run: AgentRun, step: AgentStep, request: StepRequest, memory: RunMemory | None = None
) -> bool:
    """The request of `step` holds the transcript up to `request.last_message_id`: people's
    messages up to it are now read by the agent (the chat marks them seen).

    With the run's `memory` (whose messages are whole rows): asked only when one of them is a
    person's message not marked yet, so a run pays one statement for the message that started
    it and one per message people write while it works; the rows in memory are marked too."""
    up_to = request.last_message_id
    if up_to is None:
        return False
    unseen: list[Message] = []
    if memory is not None:
        unseen = [
            m
            for m in memory.messages
            if m.role == Message.Role.USER and m.seen_at is None and m.pk <= up_to
        ]
        if not unseen:
            return False
    at = services.messages_mark_seen(
        session_id=run.session_id, up_to_message_id=up_to, run_id=run.pk, step_number=step.number
    )
    for message in unseen:
        message.seen_at = at or timezone.now()
        message.seen_in_run_id, message.seen_at_step = run.pk, step.number
    return at is not None


def mark_changes_seen(
    *, run: AgentRun, step: AgentStep, request: StepRequest, memory: RunMemory | None = None
) -> list[int]:
    """The hint of `step` shows the plan at `request.plan_version`: people's changes up to it
    are now seen by the agent (the board stops showing them as pending).

    With the run's `memory`: when the previous step marked the plan through the version that
    step was shown, and the hint lists no change by a person since, there is nothing new to
    mark and the database is not asked. At a run's first step that previous step is the
    session's last completed one: every step marks as it opens, before its model call (or
    skips, by this same rule), so a completed step has marked through what it was shown."""
    if request.plan_id is None or request.plan_version is None:
        return []
    if memory is not None:
        marked = memory.marked_through or memory.previous_shown()
        memory.marked_through = (request.plan_id, request.plan_version)
        if memory.made_every_change(request.plan_id, 0, request.plan_version):
            return []  # a plan this run created, and only it has changed since: no one's edits
        by_people = any(e["actor"]["kind"] != "agent" for e in request.changes)
        if (
            marked is not None
            and marked == memory.previous_shown()
            and marked[0] == request.plan_id
            and not by_people
            and len(request.changes) < MAX_CHANGES
        ):
            return []
    finished: list[Any] = []

    def steps_finished_since(created_at: Any) -> int:
        # Model calls already under way when the change was made finished without seeing it.
        if not finished:
            finished.extend(
                AgentStep.objects.filter(run__session_id=run.session_id, finished_at__isnull=False)
                .exclude(pk=step.pk)
                .order_by("-id")
                .values_list("finished_at", flat=True)[:50]
            )
        return sum(1 for at in finished if at >= created_at)

    return services.plan_events_mark_seen(
        plan_id=request.plan_id,
        up_to_version=request.plan_version,
        run_id=run.pk,
        step_number=step.number,
        steps_finished_since=steps_finished_since,
    )
