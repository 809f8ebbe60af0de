"""The transcript's writes: people's messages (which start or resume a run), the agent's
answers, and which messages a run's step has read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from planboard import broadcast, sql
from planboard.exceptions import PlanError
from planboard.models import MESSAGE_MAX, AgentRun, Channel, Decision, Message
from planboard.pgtext import without_nul
from planboard.services._core import _clean_text, _lock_session
from planboard.services._inbox import WaitRef, _check_wait, _record_decision, _run_waits_kind
from planboard.services._people import check_answer, refuse_if_owner_inactive
from planboard.services.attachments import _attachments_of, _clean_resource_refs
from planboard.services.run_queue import queue_new_run
from planboard.services.runs import (
    DENIED_BY_MESSAGE,
    _deny_pending_calls,
    _publish_message,
    _requeue,
)


def message_post(
    *,
    session_id: int,
    author: User,
    content: str,
    channel: str = Channel.BROWSER,
    intent: str = "reply",
    resources: Any = None,
    wait: WaitRef | None = None,
) -> tuple[Message, AgentRun]:
    """A person writes to the agent: store the message and make sure a run will read it.

    An active run sees the message at its next step; a run waiting for the user's go-ahead
    resumes; a run waiting for approvals resumes too, its undecided calls denied (writing
    instead of deciding says "not like this"; nothing is ever approved without a decision);
    otherwise a new run is queued. A queued run is dispatched when its owner has room under
    PLANBOARD_USER_RUNS_IN_FLIGHT, else it waits its turn (`run_queue`). Answering a waiting
    run is recorded as a decision (who, through `channel`); `intent="confirm"` is the plan's
    go-ahead and is refused when no plan waits for one (a stale button must not start a new
    conversation). `resources`: MCP resources attached (`{toolset_id, uri}` each, at most
    `ATTACHMENTS_MAX`): each must be listed by a toolset the session uses now; the run reads
    them from their servers before its next model call. `wait` (an action link's): answer
    only that exact wait, and confirm only the plan revision it names (else `already_decided`
    or `plan_changed`).

    Someone the owner named to answer (not acting in the session) only answers a run waiting
    for the user, in text (`Forbidden` otherwise); nobody writes to an inactive owner's
    session (`PlanError`, code `owner_inactive`): it would start or resume a run.
    """
    if intent not in ("reply", "confirm"):
        raise PlanError("'intent' must be 'reply' or 'confirm'.")
    clean = _clean_text(content, field="content", required=True, limit=MESSAGE_MAX)
    wanted = _clean_resource_refs(resources)
    # The run's news and the message's leave in one round trip when it commits.
    with broadcast.batched(), transaction.atomic():
        session = _lock_session(session_id)
        refuse_if_owner_inactive(session, author)
        latest = sql.latest_run(session.pk)
        waits = (
            _run_waits_kind(latest)
            if latest is not None and latest.status == AgentRun.Status.WAITING_FOR_USER
            else None
        )
        if wait is not None:
            _check_wait(wait, latest if waits is not None else None, session)
        if intent == "confirm" and waits != Decision.Kind.CONFIRMATION:
            raise PlanError(
                "No plan of this session waits for a go-ahead any more.", code="already_decided"
            )
        check_answer(session, author, run_waits=waits is not None, attaching=bool(wanted))
        attachments = _attachments_of(session_id, wanted)
        if latest is not None and latest.is_active:
            run = latest
        elif latest is not None and waits is not None:
            run = latest
            confirmed = intent == "confirm"
            _record_decision(
                session=session,
                kind=waits,
                decision=Decision.Choice.CONFIRM if confirmed else Decision.Choice.REPLY,
                user=author,
                channel=channel,
                run_id=run.pk,
                summary=clean.splitlines()[0][:200],
            )
            _requeue(run)
        elif latest is not None and latest.status == AgentRun.Status.WAITING_FOR_APPROVAL:
            run = latest
            _deny_pending_calls(run, note=DENIED_BY_MESSAGE, user=author, channel=channel)
            _requeue(run)
        else:
            run = queue_new_run(session)
        message = Message(
            session=session,
            run=run,
            author=author,
            role=Message.Role.USER,
            content=clean,
            attachments=attachments or None,
        )
        sql.message_insert(message)  # a person's message has no tool call: always stored
        if not session.title:
            session.title = clean.splitlines()[0][:80]
        session.updated_at = sql.session_set_title(session.pk, session.title)
        _publish_message(message)
    return message, run


def messages_mark_seen(
    *, session_id: int, up_to_message_id: int, run_id: int, step_number: int
) -> datetime | None:
    """Record that a run's step read the session's transcript up to `up_to_message_id`: people's
    messages up to it that no step had read are now seen (the chat marks them), and the
    session's clients are told (`session.messages_seen`). Returns when, or None: nothing new.

    Metadata on the transcript only, one statement: no lock, no plan version; the caller (the
    agent step) asks only when its input holds a person's message not marked yet."""
    now = timezone.now()
    marked = Message.objects.filter(
        session_id=session_id,
        role=Message.Role.USER,
        seen_at__isnull=True,
        pk__lte=up_to_message_id,
    ).update(seen_at=now, seen_in_run_id=run_id, seen_at_step=step_number)
    if not marked:
        return None
    payload = {
        "type": "session.messages_seen",
        "session_id": session_id,
        "up_to": up_to_message_id,
        "seen": {"at": now.isoformat(), "run_id": run_id, "step": step_number},
    }
    groups = [broadcast.session_group(session_id)]
    transaction.on_commit(lambda: broadcast.publish(groups, payload))
    return now


def message_record_agent(
    *,
    session_id: int,
    run_id: int | None,
    role: str,
    content: str = "",
    tool_calls: list[dict[str, Any]] | None = None,
    tool_call_id: str = "",
    tool_name: str = "",
    answer_id: str = "",
) -> Message:
    """Store an assistant or tool message of a run (the agent's side of the transcript)."""
    if role not in (Message.Role.ASSISTANT, Message.Role.TOOL):
        raise PlanError(f"Agent messages are 'assistant' or 'tool', not {role!r}.")
    fields = {
        "session_id": session_id,
        "run_id": run_id,
        "role": role,
        # Model output is stored as given, minus NUL (PostgreSQL text can't hold it).
        "content": (content or "").replace("\x00", ""),
        "tool_calls": without_nul(tool_calls) if tool_calls else None,
        "tool_call_id": tool_call_id,
        "tool_name": tool_name,
        "answer_id": answer_id,
    }
    message = Message(**fields)
    # No savepoint of its own inside a caller's transaction: one insert cannot half-happen.
    with transaction.atomic(savepoint=False):
        stored = sql.message_insert(message)  # every step stores one or two
        if stored:
            _publish_message(message)
    if not stored:
        # Raised outside the block: the caller's transaction stays usable.
        raise PlanError(
            f"Tool call {tool_call_id} already has a result.", code="duplicate_tool_call"
        )
    return message
