"""What the services share about the inbox: the record of a decision (which also spends
every action link of the item decided), telling the people concerned that their inbox
changed, and queueing the notifications of a new waiting item.

Every helper here runs inside its caller's transaction: the decision is stored with the
change it records, the outbox rows with the item they announce (a crash loses neither), and
the broadcast and the send task go out on commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from planboard import broadcast, selectors
from planboard.exceptions import PlanError
from planboard.models import (
    ActionLink,
    AgentRun,
    Channel,
    ChatSession,
    Decision,
    Elicitation,
    Notification,
    NotificationSettings,
    Plan,
    ToolCall,
)

CHANNELS = frozenset(Channel.values)
# A run's items: what a decision with a run and none of these kinds answers.
_RUN_KINDS = frozenset({Decision.Kind.CONFIRMATION, Decision.Kind.BUDGET, Decision.Kind.QUESTION})


def _record_decision(
    *,
    session: ChatSession,
    kind: str,
    decision: str,
    user: User | None,
    channel: str,
    run_id: int | None = None,
    tool_call: ToolCall | None = None,
    elicitation: Elicitation | None = None,
    summary: str = "",
) -> Decision:
    if channel not in CHANNELS:
        raise ValueError(f"unknown decision channel {channel!r}")
    _spend_links(
        kind=kind, channel=channel, run_id=run_id, tool_call=tool_call, elicitation=elicitation
    )
    return Decision.objects.create(
        session_id=session.pk,
        run_id=run_id,
        plan_id=session.current_plan_id,
        tool_call=tool_call,
        elicitation=elicitation,
        kind=kind,
        decision=decision,
        user=user,
        channel=channel,
        summary=summary[:200],
    )


def _spend_links(
    *,
    kind: str,
    channel: str,
    run_id: int | None,
    tool_call: ToolCall | None,
    elicitation: Elicitation | None,
) -> None:
    """The item is decided: every unused action link for it, whoever's, is spent, whichever
    channel decided. A link made for a wait that is over must never decide what comes next."""
    if elicitation is not None:
        key = selectors.elicitation_key(elicitation.pk)
    elif tool_call is not None:
        key = selectors.tool_call_key(tool_call.pk)
    elif run_id is not None and kind in _RUN_KINDS:
        # The wait being answered: the run's latest (an earlier one's links name an item
        # that no longer exists, so they decide nothing either).
        waits = AgentRun.objects.filter(pk=run_id).values_list("waits", flat=True).first()
        key = selectors.run_key(run_id, waits or 0)
    else:
        return
    # Used after its time, or swept: the page says "expired"; otherwise "already decided".
    outcome = "expired" if channel == Channel.EXPIRY else "already_decided"
    ActionLink.objects.filter(item_key=key, used_at__isnull=True).update(
        used_at=timezone.now(), outcome=outcome
    )


def _inbox_changed(session_id: int, *, user_ids: list[int] | None = None) -> None:
    """On commit, tell the inbox sockets of the session's owner and answerers (or of
    `user_ids`) to refetch. The event carries only what changed; a client that missed one
    heals at its next refetch."""

    def tell() -> None:
        people = (
            user_ids if user_ids is not None else selectors.inbox_recipients(session_id=session_id)
        )
        event = {"type": "inbox.changed", "session_id": session_id}
        broadcast.publish([broadcast.inbox_group(uid) for uid in people], event)

    transaction.on_commit(tell)


def _item_waits(session_id: int, *, key: str, kind: str) -> None:
    """A new item waits on people: their inboxes change, and those who asked to hear about
    this kind get an outbox row per channel, sent after their delay unless answered."""
    _inbox_changed(session_id)
    recipients = selectors.inbox_recipients(session_id=session_id)
    wanted = NotificationSettings.objects.filter(user_id__in=recipients).select_related("user")
    now = timezone.now()
    queued: list[tuple[int, float]] = []
    for prefs in wanted:
        if kind not in (prefs.kinds or []):
            continue
        channels = []
        if prefs.email and prefs.user.email:
            channels.append(Channel.EMAIL)
        if prefs.webhook_url:
            channels.append(Channel.WEBHOOK)
        for channel in channels:
            row, made = Notification.objects.get_or_create(
                user_id=prefs.user_id,
                item_key=key,
                channel=channel,
                defaults={
                    "session_id": session_id,
                    "kind": kind,
                    "send_after": now + timedelta(seconds=prefs.delay_seconds),
                },
            )
            if made:
                queued.append((row.pk, float(prefs.delay_seconds)))
    if queued:
        dispatcher = import_string(settings.PLANBOARD_NOTIFICATION_DISPATCHER)
        transaction.on_commit(lambda: [dispatcher(pk, delay) for pk, delay in queued])


def _run_waits_kind(run: AgentRun) -> str:
    """What a run that now waits for the user asks of them (the inbox's item kind)."""
    if run.pause_reason == AgentRun.PAUSE_BUDGET:
        return Decision.Kind.BUDGET
    session = ChatSession.objects.select_related("current_plan").get(pk=run.session_id)
    plan = session.current_plan
    if plan is not None:
        states = list(plan.subtasks.values_list("state", flat=True))
        if selectors.awaits_confirmation(session, states, plan.state):
            return Decision.Kind.CONFIRMATION
    return Decision.Kind.QUESTION


@dataclass(frozen=True)
class WaitRef:
    """The exact wait an answer was made for: the item's key and, for a confirmation, the
    plan revision the person was shown."""

    key: str
    plan_id: int | None = None
    plan_version: int | None = None


def _check_wait(expected: WaitRef, run: AgentRun | None, session: ChatSession) -> None:
    """Refuse unless `run` still waits on the same item and the session's current plan is the
    revision shown. The caller holds the session's lock, which every plan change takes first,
    so nothing changes between this check and the answer."""
    if run is None or selectors.run_key(run.pk, run.waits) != expected.key:
        raise PlanError(
            "This wait is over: someone answered it, or the run moved on.", code="already_decided"
        )
    if expected.plan_version is None:
        return
    plan_id = session.current_plan_id
    shown = plan_id is not None and plan_id == expected.plan_id
    current = Plan.objects.filter(pk=plan_id or 0).values_list("version", flat=True).first()
    if not shown or current != expected.plan_version:
        raise PlanError(
            "The plan changed since it was shown: look at it again before confirming.",
            code="plan_changed",
        )
