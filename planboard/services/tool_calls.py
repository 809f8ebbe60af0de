"""Tool calls: the record of every call the agent makes of a toolset's tools, from the
model's request (`tool_call_open`) through people's approve/deny decisions to the run
(`tool_call_claim`) and its answer (`tool_call_answer`); and the run's pause while calls wait.

Lock order (after `_core`'s): session, run, then tool-call rows. No transaction is held
while a server is asked anything: a call is claimed and committed before its server runs.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from planboard import selectors
from planboard.exceptions import Forbidden, PlanError
from planboard.models import (
    TEXT_MAX,
    TOOL_NAME_MAX,
    AgentRun,
    Channel,
    Decision,
    Message,
    ToolCall,
    Toolset,
)
from planboard.pgtext import without_nul
from planboard.services._core import _clean_text, _lock_session
from planboard.services._inbox import _inbox_changed, _item_waits, _record_decision
from planboard.services._people import check_always_allow, refuse_if_owner_inactive
from planboard.services._waits import _calls_wait
from planboard.services.elicitations import _take_down_questions
from planboard.services.messages import message_record_agent
from planboard.services.runs import (
    DENIED_BY_STOP,
    _deny_pending_calls,
    _load_run,
    _publish_tool_call,
    _requeue,
    _run_set_status,
)


def tool_call_open(
    *,
    session_id: int,
    run_id: int,
    tool_call_id: str,
    tool_name: str,
    toolset_id: int | None,
    tool: str,
    arguments: dict[str, Any],
    read_only: bool,
    status: str,
) -> ToolCall:
    """Record a call the model made: `pending` (a person decides) or `approved` (it may run).
    The record of a call id is made once; asking again returns the stored one."""
    if status not in (ToolCall.Status.PENDING, ToolCall.Status.APPROVED):
        raise PlanError(f"A tool call starts pending or approved, not {status!r}.")
    try:
        with transaction.atomic():
            record = ToolCall.objects.create(
                session_id=session_id,
                run_id=run_id,
                tool_call_id=tool_call_id,
                tool_name=tool_name[:200],
                toolset_id=toolset_id,
                tool=tool[:TOOL_NAME_MAX],
                arguments=without_nul(arguments),
                read_only=read_only,
                status=status,
            )
            _publish_tool_call(record)
            if status == ToolCall.Status.PENDING:
                _item_waits(
                    session_id,
                    key=selectors.tool_call_key(record.pk),
                    kind=Decision.Kind.APPROVAL,
                )
            return record
    except IntegrityError:
        return ToolCall.objects.get(session_id=session_id, tool_call_id=tool_call_id)


def repeatable(record: ToolCall) -> bool:
    """Whether a call found `running` after its worker died may simply run again."""
    builtin = record.toolset is not None and record.toolset.kind == Toolset.Kind.BUILTIN
    return record.read_only or builtin


def tool_call_claim(*, record_id: int, retry: bool = False) -> ToolCall | None:
    """Mark an approved call `running`, committed before its server is called, so a worker
    that dies mid-call leaves evidence. Only one caller wins; others get None. `retry`
    claims a call found running after its worker died: read-only calls, and calls of
    built-in tools (their effect commits with their result, so an unanswered one had none)."""
    statuses = [ToolCall.Status.APPROVED]
    if retry:
        statuses.append(ToolCall.Status.RUNNING)
    with transaction.atomic():
        record = (
            ToolCall.objects.select_for_update(no_key=True, of=("self",))
            .select_related("toolset")
            # How to reach the server, yes (it is called next); its cached listing, never.
            .defer("toolset__tools_cache")
            .filter(pk=record_id, status__in=statuses)
            .first()
        )
        if record is None or (record.status == ToolCall.Status.RUNNING and not repeatable(record)):
            return None
        if record.status == ToolCall.Status.RUNNING:
            _take_down_questions(tool_call_id=record.pk)  # asked by the worker that died
        record.status = ToolCall.Status.RUNNING
        record.started_at = timezone.now()
        record.save(update_fields=["status", "started_at"])
        _publish_tool_call(record)
    if record.toolset is not None:
        # A per-person toolset is reached with the session owner's own credential; without
        # one the call has no toolset to reach (the caller answers that it was not run).
        record.toolset = selectors.toolset_as_called(record.toolset, session_id=record.session_id)
    return record


def tool_call_answer(
    *,
    record_id: int,
    content: str,
    status: str | None = None,
    duration_ms: int | None = None,
) -> Message:
    """Store a call's result for the model and the call's final status, together (a result
    is stored once per call id: a second answer raises `PlanError(code=duplicate_tool_call)`
    and changes nothing)."""
    with transaction.atomic():
        record = ToolCall.objects.select_for_update(no_key=True).get(pk=record_id)
        message = message_record_agent(
            session_id=record.session_id,
            run_id=record.run_id,
            role=Message.Role.TOOL,
            content=content,
            tool_call_id=record.tool_call_id,
            tool_name=record.tool_name[:100],
        )
        fields = []
        if status is not None:
            record.status = status
            fields.append("status")
        if duration_ms is not None:
            record.duration_ms = max(0, int(duration_ms))
            fields.append("duration_ms")
        if status in (
            ToolCall.Status.SUCCEEDED,
            ToolCall.Status.FAILED,
            ToolCall.Status.INTERRUPTED,
        ):
            record.finished_at = timezone.now()
            fields.append("finished_at")
        if fields:
            record.save(update_fields=fields)
            _publish_tool_call(record)
        if status == ToolCall.Status.INTERRUPTED:
            _take_down_questions(tool_call_id=record.pk)  # its worker died waiting on them
    return message


DECISIONS = ("approve", "deny")


def tool_call_decide(
    *,
    session_id: int,
    tool_call_id: str,
    user: User,
    decision: str,
    note: str = "",
    always_allow: bool = False,
    channel: str = Channel.BROWSER,
) -> ToolCall:
    """A person approves or denies a call waiting for them. `always_allow` (with approve; the
    owner's or staff's with `change_chatsession`, never an answerer's) lets later calls of the
    same tool in this session run without asking, and approves the ones already waiting.
    Once no call of the run waits any more, the run is queued again; so nothing is decided in
    an inactive owner's session. Who decided, when and through which `channel` is kept on the
    call and as a `Decision`."""
    if decision not in DECISIONS:
        raise PlanError("'decision' must be 'approve' or 'deny'.")
    if not isinstance(always_allow, bool):
        raise PlanError("'always_allow' must be true or false.")
    if always_allow and decision != "approve":
        raise PlanError("'always_allow' goes with 'approve' only.")
    clean_note = _clean_text(note, field="note", limit=TEXT_MAX)
    with transaction.atomic():
        session = _lock_session(session_id)
        if not selectors.can_decide_tool_calls(user, session.owner_id, session_id=session_id):
            raise Forbidden(
                "Only the session's owner, the people they named to answer it, or staff "
                "allowed to change tool calls decide its tool calls."
            )
        if always_allow:
            check_always_allow(session, user)
        refuse_if_owner_inactive(session, user)  # a decision would resume the run
        found = ToolCall.objects.filter(session_id=session_id, tool_call_id=tool_call_id).first()
        if found is None:
            raise PlanError(f"This session has no tool call {tool_call_id!r}.", code="not_found")
        run = (
            AgentRun.objects.select_for_update(no_key=True).filter(pk=found.run_id).first()
            if found.run_id
            else None
        )
        record = ToolCall.objects.select_for_update(no_key=True).get(pk=found.pk)
        if record.status != ToolCall.Status.PENDING:
            raise PlanError(
                f"This call is no longer waiting for a decision (it is {record.status}).",
                code="already_decided",
            )
        now = timezone.now()
        record.status = (
            ToolCall.Status.APPROVED if decision == "approve" else ToolCall.Status.DENIED
        )
        record.note = clean_note
        record.decided_by = user
        record.decided_at = now
        record.decided_via = channel
        record.always_allow = always_allow
        record.save(
            update_fields=[
                "status",
                "note",
                "decided_by",
                "decided_at",
                "decided_via",
                "always_allow",
            ]
        )
        _publish_tool_call(record)
        _record_decision(
            session=session,
            kind=Decision.Kind.APPROVAL,
            decision=(
                Decision.Choice.ALWAYS_ALLOW
                if always_allow
                else Decision.Choice.APPROVE
                if decision == "approve"
                else Decision.Choice.DENY
            ),
            user=user,
            channel=channel,
            run_id=record.run_id,
            tool_call=record,
            summary=record.tool_name,
        )
        _inbox_changed(session_id)
        if always_allow:
            same_toolset = (
                Q(toolset__isnull=True)
                if record.toolset_id is None
                else Q(toolset_id=record.toolset_id)
            )
            for other in ToolCall.objects.select_for_update(no_key=True).filter(
                same_toolset,
                session_id=session_id,
                tool=record.tool,
                status=ToolCall.Status.PENDING,
            ):
                other.status = ToolCall.Status.APPROVED
                other.decided_by = user
                other.decided_at = now
                other.decided_via = channel
                other.save(update_fields=["status", "decided_by", "decided_at", "decided_via"])
                _publish_tool_call(other)
        if (
            run is not None
            and run.status == AgentRun.Status.WAITING_FOR_APPROVAL
            and not _calls_wait(run)
        ):
            _requeue(run)
    return record


DENIED_BY_EXPIRY = "Nobody decided before the approval link expired; counted as a denial."


def tool_call_expire(*, record_id: int) -> bool:
    """An action link for this call expired unused: a call still waiting counts as denied,
    by nobody, through `expiry` (recorded like any decision). False when it no longer
    waited (someone decided elsewhere)."""
    with transaction.atomic():
        found = ToolCall.objects.filter(pk=record_id).values_list("session_id", "run_id").first()
        if found is None:
            return False
        session = _lock_session(found[0])
        run = (
            AgentRun.objects.select_for_update(no_key=True).filter(pk=found[1]).first()
            if found[1]
            else None
        )
        record = ToolCall.objects.select_for_update(no_key=True).get(pk=record_id)
        if record.status != ToolCall.Status.PENDING:
            return False
        record.status = ToolCall.Status.DENIED
        record.note = DENIED_BY_EXPIRY
        record.decided_at = timezone.now()
        record.decided_via = Channel.EXPIRY
        record.save(update_fields=["status", "note", "decided_at", "decided_via"])
        _publish_tool_call(record)
        _record_decision(
            session=session,
            kind=Decision.Kind.APPROVAL,
            decision=Decision.Choice.DENY,
            user=None,
            channel=Channel.EXPIRY,
            run_id=record.run_id,
            tool_call=record,
            summary=record.tool_name,
        )
        _inbox_changed(session.pk)
        if (
            run is not None
            and run.status == AgentRun.Status.WAITING_FOR_APPROVAL
            and not _calls_wait(run)
        ):
            _requeue(run)
    return True


def run_pause_for_approval(*, run_id: int) -> AgentRun:
    """Pause a running run until people decide its pending calls (and answer the questions
    its parked calls wait on). Under the same locks as `tool_call_decide` and
    `elicitation_answer`, so a decision or answer made meanwhile is never missed: with nothing left
    pending the run stays running (the caller goes on). A cancel requested meanwhile wins."""
    with transaction.atomic():
        session_id = AgentRun.objects.filter(pk=run_id).values_list("session_id", flat=True)
        if session_id:
            _lock_session(session_id[0])
        run = _load_run(run_id)
        if not run.is_active:
            return run
        if run.cancel_requested:
            _deny_pending_calls(run, note=DENIED_BY_STOP)
            return _run_set_status(run, AgentRun.Status.CANCELLED, "")
        if not _calls_wait(run):  # a decision or an answer came in meanwhile
            return run
        return _run_set_status(
            run, AgentRun.Status.WAITING_FOR_APPROVAL, "", pause_reason=AgentRun.PAUSE_APPROVAL
        )
