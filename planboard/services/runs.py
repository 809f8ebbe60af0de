"""Agent runs: their start, lease, status and end, the usage their steps count, cancel and
hand-off. The other services move a run through the helpers here (`_requeue`,
`_run_set_status`, `_deny_pending_calls`) and publish a transcript row with `_publish_message`
and `_publish_tool_call`, so the message services build on this module, never the reverse."""

from __future__ import annotations

from collections.abc import Collection
from decimal import Decimal
from typing import NamedTuple

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from planboard import broadcast, selectors, sql
from planboard.exceptions import PlanError
from planboard.models import TEXT_MAX, AgentRun, ChatSession, Decision, Message, ToolCall
from planboard.selectors.runs import run_waits_for_admission
from planboard.services._core import _clean_state, _lock_session, _publish_session
from planboard.services._inbox import _inbox_changed, _item_waits, _record_decision, _run_waits_kind
from planboard.services._people import OWNER_INACTIVE
from planboard.services._waits import _void_input_rounds
from planboard.services.run_queue import (
    _admit_or_wait,
    _dispatch_on_commit,
    _lease_until,
    _lock_user,
    _publish_run,
    admit_waiting_locked,
    claim_waiting_run,
    queue_moved_on_commit,
    waiting_run_owner,
)
from planboard.services.usage import profile_usage_add
from planboard.snapshots import serialize_message, serialize_tool_call, serialize_usage

# What a call still waiting for a decision is told when its run moves on without one.
DENIED_BY_MESSAGE = "The person wrote a message instead of deciding; read it."
DENIED_BY_STOP = "The run was stopped before anyone decided."


class RunStopFlags(NamedTuple):
    """What decides whether a running run's worker goes on (`run_record_step`)."""

    cancel_requested: bool
    lease_owner: str


def _load_run_to_start(run_id: int) -> AgentRun:
    """The run, locked, with whether its session's owner is active (`owner_active`): in the
    same statement, so starting a run costs nothing more."""
    queryset = AgentRun.objects.select_for_update(no_key=True, of=("self",)).annotate(
        owner_active=F("session__owner__is_active")
    )
    try:
        return queryset.get(pk=run_id)
    except AgentRun.DoesNotExist:
        raise PlanError(f"Run {run_id} does not exist.", code="not_found") from None


def _load_run(run_id: int, *, lock: bool = True) -> AgentRun:
    queryset = AgentRun.objects.select_for_update(no_key=True) if lock else AgentRun.objects
    try:
        return queryset.get(pk=run_id)
    except AgentRun.DoesNotExist:
        raise PlanError(f"Run {run_id} does not exist.", code="not_found") from None


def run_start(*, run_id: int, worker: str = "") -> AgentRun:
    """Claim a queued (or redelivered, still running) run for `worker`; other statuses come
    back as is.

    A running run whose lease another worker still holds is left alone: the caller sees
    `run.lease_owner != worker` and must not drive it. An expired lease is taken over. A run
    still waiting for admission (a stale or duplicate message) starts only if its owner has
    room now; otherwise it comes back queued and keeps its place.
    """
    with transaction.atomic():
        run = _load_run_to_start(run_id)
        if not run_waits_for_admission(run):
            return _claim(run, worker)
    # Rare: the admission decides in its lock order (the user, then the run), so this starts
    # over in that order.
    with transaction.atomic():
        waiting_owner = waiting_run_owner(run_id)
        if waiting_owner is not None:
            _lock_user(waiting_owner)
        run = _load_run_to_start(run_id)
        if (
            run_waits_for_admission(run)
            and not run.cancel_requested
            and not claim_waiting_run(run, owner_id=waiting_owner)
        ):
            return run
        return _claim(run, worker)


def _claim(run: AgentRun, worker: str) -> AgentRun:
    """`run_start`'s decision on the locked run, which may start (or is cancelled)."""
    if run.status in AgentRun.ACTIVE_STATUSES and run.cancel_requested:
        return _run_set_status(run, AgentRun.Status.CANCELLED, "")
    if run.status == AgentRun.Status.RUNNING and run.lease_owner not in ("", worker):
        if run.lease_expires_at is not None and run.lease_expires_at > timezone.now():
            return run  # another worker is driving it right now
    if run.status in AgentRun.ACTIVE_STATUSES and not getattr(run, "owner_active", True):
        # Queued before the owner was deactivated (or resumed since): it does not start.
        return _run_set_status(run, AgentRun.Status.FAILED, OWNER_INACTIVE)
    if run.status in AgentRun.ACTIVE_STATUSES:
        was_queued = run.status == AgentRun.Status.QUEUED
        run.first_start = was_queued and run.started_at is None
        run.status = AgentRun.Status.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.lease_owner = worker
        run.lease_expires_at = _lease_until()
        run.save(update_fields=["status", "started_at", "lease_owner", "lease_expires_at"])
        if was_queued:
            _publish_run(run)
    return run


def run_renew_lease(*, run_id: int, worker: str) -> bool:
    """The heartbeat: extend `worker`'s lease on a running run. False when it no longer holds
    it (another worker took over, or the run stopped)."""
    renewed = AgentRun.objects.filter(
        pk=run_id, status=AgentRun.Status.RUNNING, lease_owner=worker
    ).update(lease_expires_at=_lease_until())
    return bool(renewed)


def _publish_message(message: Message) -> None:
    _publish_session(
        message.session_id, {"type": "session.message", "message": serialize_message(message)}
    )


def _publish_tool_call(record: ToolCall) -> None:
    _publish_session(
        record.session_id, {"type": "session.tool_call", "tool_call": serialize_tool_call(record)}
    )


def _deny_pending_calls(
    run: AgentRun, *, note: str, user: User | None = None, channel: str = ""
) -> None:
    """Close the run's undecided tool calls as denied (the run goes on, or stops, without
    them), and give up the questions its parked calls wait on; the caller holds the run's
    lock. With `user`, it is their decision (they wrote
    instead of deciding), recorded with its channel."""
    pending = list(
        ToolCall.objects.select_for_update(no_key=True, of=("self",)).filter(
            run=run, status=ToolCall.Status.PENDING
        )
    )
    now = timezone.now()
    for record in pending:
        record.status = ToolCall.Status.DENIED
        record.note = note
        record.decided_at = now
        record.decided_by = user
        record.decided_via = channel if user is not None else ""
        record.save(update_fields=["status", "note", "decided_at", "decided_by", "decided_via"])
        _publish_tool_call(record)
        if user is not None:
            _record_decision(
                session=ChatSession.objects.get(pk=run.session_id),
                kind=Decision.Kind.APPROVAL,
                decision=Decision.Choice.DENY,
                user=user,
                channel=channel,
                run_id=run.pk,
                tool_call=record,
                summary=record.tool_name,
            )
    if pending:
        _inbox_changed(run.session_id)
    _void_input_rounds(run)


def _requeue(run: AgentRun) -> None:
    """A waiting run goes back to the queue (the user answered, the spending limit that
    stopped it was raised, or every tool call it waited on was decided)."""
    run.status = AgentRun.Status.QUEUED
    run.pause_reason = ""
    run.error = ""
    run.lease_owner, run.lease_expires_at = "", None
    run.save(update_fields=["status", "pause_reason", "error", "lease_owner", "lease_expires_at"])
    _admit_or_wait(run)
    _inbox_changed(run.session_id)


def resume_budget_pause(*, session_id: int) -> AgentRun | None:
    """Re-queue the session's run paused at its spending limit; the caller holds the session
    lock and has checked that the limit no longer stops it."""
    run = (
        AgentRun.objects.select_for_update(no_key=True, of=("self",))
        .filter(session_id=session_id, status=AgentRun.Status.WAITING_FOR_USER)
        .order_by("-id")
        .first()
    )
    if run is None or run.pause_reason != AgentRun.PAUSE_BUDGET:
        return None
    _requeue(run)
    return run


def _run_set_status(
    run: AgentRun,
    status: str,
    error: str,
    *,
    pause_reason: str = "",
    owner_locked: int | None = None,
) -> AgentRun:
    """`owner_locked`: the run's owner, whose lock the caller holds (after the session's, before
    the run's): the next runs of theirs waiting for admission are let in in this transaction."""
    # Leaving the active statuses frees a place among the owner's runs in flight.
    stops = run.is_active and status not in AgentRun.ACTIVE_STATUSES
    was_waiting = run_waits_for_admission(run)
    run.status = status
    run.error = error[:TEXT_MAX]
    run.pause_reason = pause_reason if status in AgentRun.WAITING_STATUSES else ""
    if status not in (AgentRun.Status.QUEUED, AgentRun.Status.RUNNING, *AgentRun.WAITING_STATUSES):
        run.finished_at = timezone.now()
    if status != AgentRun.Status.RUNNING:
        run.lease_owner, run.lease_expires_at = "", None
    if status == AgentRun.Status.WAITING_FOR_USER:
        run.waits += 1  # a new wait: a new inbox item, never the last one's links
    run.save(
        update_fields=[
            "status",
            "error",
            "finished_at",
            "lease_owner",
            "lease_expires_at",
            "pause_reason",
            "waits",
        ]
    )
    _publish_run(run)
    if stops and owner_locked is not None:
        admit_waiting_locked(user_id=owner_locked, queue_changed=was_waiting)
    elif stops:
        queue_moved_on_commit(run, was_waiting=was_waiting)
    if status == AgentRun.Status.WAITING_FOR_USER:
        # Something now waits on people: their inboxes, and the notifications they asked for.
        key = selectors.run_key(run.pk, run.waits)
        _item_waits(run.session_id, key=key, kind=_run_waits_kind(run))
    elif status in (AgentRun.Status.WAITING_FOR_APPROVAL, AgentRun.Status.CANCELLED):
        _inbox_changed(run.session_id)
    return run


def run_finish(
    *,
    run_id: int,
    status: str,
    error: str = "",
    unless_user_message_after: int | None = None,
    pause_reason: str = "",
    session_id: int | None = None,
) -> AgentRun:
    """End (or pause for the user) a running run (`session_id`: its session, when the caller
    knows it). It frees a place among its owner's runs: their next runs waiting for admission
    are let in by the same transaction.

    With `unless_user_message_after` (a message id), a run about to succeed or wait for the
    user stays running when the user wrote after that message: the agent has not read it yet,
    and `message_post` handed it to this active run. The session lock makes this exact.
    """
    allowed = [
        AgentRun.Status.WAITING_FOR_USER,
        AgentRun.Status.WAITING_FOR_APPROVAL,
        AgentRun.Status.SUCCEEDED,
        AgentRun.Status.FAILED,
        AgentRun.Status.CANCELLED,
    ]
    clean_status = _clean_state(status, allowed=allowed)
    with transaction.atomic():
        # The one lock order (message_post's): the session, its owner, then the run.
        if session_id is None:
            session_id = (
                AgentRun.objects.filter(pk=run_id).values_list("session_id", flat=True).first()
            )
        owner_id = None if session_id is None else _lock_session(session_id).owner_id
        if owner_id is not None:
            _lock_user(owner_id)
        run = _load_run(run_id)
        if run.session_id != session_id:
            raise PlanError(f"Run {run_id} is not a run of session {session_id}.", code="not_found")
        if not run.is_active:
            return run
        if run.cancel_requested and clean_status != AgentRun.Status.FAILED:
            clean_status = AgentRun.Status.CANCELLED
        if (
            unless_user_message_after is not None
            and clean_status in (AgentRun.Status.SUCCEEDED, AgentRun.Status.WAITING_FOR_USER)
            and Message.objects.filter(
                session_id=run.session_id,
                role=Message.Role.USER,
                pk__gt=unless_user_message_after,
            ).exists()
        ):
            return run
        return _run_set_status(
            run, clean_status, error, pause_reason=pause_reason, owner_locked=owner_id
        )


def run_record_step(
    *,
    run_id: int,
    session_id: int | None = None,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    cost_usd: float = 0.0,
    plan_id: int | None = None,
    subtask_id: int | None = None,
    profile_id: int | None = None,
    user_id: int | None = None,
    returning_flags: bool = False,
) -> RunStopFlags | None:
    """Count one LLM call of a run and add its usage to the run, its session, and the plan and
    subtask it was spent on (the subtask in progress at the step). Usage is not plan content:
    no version bump, no history event; clients get a `plan.usage` event with the plan's new
    totals and those of the subtask it was spent on (the others did not change).

    With `profile_id` (the acting profile) and `user_id` (the session's owner) the usage also
    counts towards that person's spending with the profile (`profile_usage_add`).

    With `returning_flags`, returns the run's cancel request and lease owner as they are
    once the run's row is locked by this update (None if the run is gone): the agent loop
    decides in the same transaction whether the answer it stores still counts.
    """
    prompt = max(0, int(prompt_tokens or 0))
    completion = max(0, int(completion_tokens or 0))
    cost = Decimal(str(cost_usd or 0))
    if session_id is None:
        session_id = AgentRun.objects.filter(pk=run_id).values_list("session_id", flat=True).first()
    used = prompt + completion
    # The usage added to the session, plan, subtask and run (the one lock order), reading what
    # the loop must know before it keeps the answer, and the new totals for clients.
    counted = sql.run_count_step(
        run_id,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=cost,
        session_id=session_id,
        plan_id=plan_id,
        subtask_id=subtask_id,
    )
    stop = RunStopFlags(*counted[:2]) if counted is not None and returning_flags else None
    if profile_id is not None and user_id is not None:
        profile_usage_add(user_id=user_id, profile_id=profile_id, cost_usd=cost, tokens=used)
    if plan_id is None or counted is None or counted[2][2] is None:
        return stop
    session_cost, session_tokens, plan_cost, plan_tokens, subtask_cost, subtask_tokens = counted[2]
    spent_on = []
    if subtask_id is not None and subtask_cost is not None:  # (None: deleted meanwhile)
        spent_on.append((subtask_id, subtask_cost, subtask_tokens))
    usage = serialize_usage(plan_id, plan_cost, plan_tokens, spent_on)
    groups = [broadcast.plan_group(plan_id)]
    if session_id:
        groups.append(broadcast.session_group(session_id))
    event = {"type": "plan.usage", "session_id": session_id, **usage}
    if session_cost is not None:
        # The session's total beside the plan's: the page labels both.
        event["session"] = {"cost_usd": float(session_cost), "tokens": session_tokens}
    transaction.on_commit(lambda: broadcast.publish(groups, event))
    return stop


def run_cancel(*, session_id: int) -> AgentRun | None:
    """Stop the session's active or waiting run. A queued run stops at once; a running one at
    its next step. Returns the run, or None when nothing was running."""
    with transaction.atomic():
        _lock_session(session_id)
        run = (
            AgentRun.objects.select_for_update(no_key=True)
            .filter(
                session_id=session_id,
                status__in=[*AgentRun.ACTIVE_STATUSES, *AgentRun.WAITING_STATUSES],
            )
            .order_by("-id")
            .first()
        )
        if run is None:
            return None
        _deny_pending_calls(run, note=DENIED_BY_STOP)
        if run.status == AgentRun.Status.RUNNING:
            run.cancel_requested = True
            run.save(update_fields=["cancel_requested"])
            _publish_run(run)
            return run
        run.cancel_requested = True
        run.save(update_fields=["cancel_requested"])
        return _run_set_status(run, AgentRun.Status.CANCELLED, "")


# --- the run host (agents/runtime): many runs per worker process ------------------------------


def run_renew_leases(*, run_ids: Collection[int], worker: str) -> set[int]:
    """The run host's heartbeat: extend `worker`'s lease on all these runs in one statement.
    Returns the ids it still holds (a run missing from it was taken over or stopped)."""
    ids = list(run_ids)
    if not ids:
        return set()
    held = AgentRun.objects.filter(pk__in=ids, status=AgentRun.Status.RUNNING, lease_owner=worker)
    if held.update(lease_expires_at=_lease_until()) == len(ids):
        return set(ids)
    return set(held.values_list("pk", flat=True))


def run_hand_off(*, run_id: int, worker: str) -> bool:
    """A worker that stops (SIGTERM) gives a running run back: its lease ends now and the run
    is dispatched again, to be taken up from its stored state by another worker. False when
    `worker` did not hold it (nothing changes then)."""
    with transaction.atomic():
        released = AgentRun.objects.filter(
            pk=run_id, status=AgentRun.Status.RUNNING, lease_owner=worker
        ).update(lease_owner="", lease_expires_at=timezone.now())
        if released:
            _dispatch_on_commit(run_id)
    return bool(released)
