"""Elicitations: a question an MCP server asks a person in the middle of a tool
call. The worker running the call records it (`elicitation_open`) and then polls it in short
units of its own, with no transaction or lock held while a person thinks; a person answers it
(`elicitation_answer`), or the worker closes it when nobody did in time or the run stopped
(`elicitation_close`).

Lock order (after `_core`'s): session, then the elicitation row.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from planboard import selectors
from planboard.elicitation import MESSAGE_MAX, check_content, check_schema, check_url
from planboard.exceptions import Forbidden, PlanError
from planboard.models import AgentRun, Channel, Decision, Elicitation
from planboard.pgtext import without_nul
from planboard.services._core import _lock_session
from planboard.services._inbox import _inbox_changed, _item_waits, _record_decision
from planboard.services._people import refuse_if_owner_inactive
from planboard.services._waits import (
    _calls_wait,
    _publish_question,
    _question_summary,
    _record_expiry,
)
from planboard.services.runs import _requeue

ACTIONS = {
    "accept": (Elicitation.Status.ACCEPTED, Decision.Choice.ACCEPT),
    "decline": (Elicitation.Status.DECLINED, Decision.Choice.DECLINE),
    "cancel": (Elicitation.Status.CANCELLED, Decision.Choice.CANCEL),
}
CLOSING = (Elicitation.Status.EXPIRED, Elicitation.Status.CANCELLED)


_publish = _publish_question


def _checked_question(
    mode: str, message: Any, requested_schema: dict[str, Any] | None, url: str
) -> tuple[str, dict[str, Any], str]:
    """(message, schema, url) of a server's question as stored, or `PlanError` (code
    `bad_schema`) when it is not one the specification allows."""
    if mode == Elicitation.Mode.FORM:
        schema = check_schema(requested_schema)
        url = ""
    elif mode == Elicitation.Mode.URL:
        url = check_url(url)
        schema = {}
    else:
        raise PlanError(f"Unknown elicitation mode {mode!r}.", code="bad_schema")
    if not isinstance(message, str):
        raise PlanError("The server's message must be text.", code="bad_schema")
    return without_nul(message)[:MESSAGE_MAX], schema, url


def _ask(row: Elicitation) -> Elicitation:
    """Inside the caller's transaction: a new question waits on the session's people."""
    row = Elicitation.objects.select_related("tool_call", "answered_by").get(pk=row.pk)
    _publish(row)
    _item_waits(
        row.session_id, key=selectors.elicitation_key(row.pk), kind=Decision.Kind.ELICITATION
    )
    return row


def elicitation_open(
    *,
    session_id: int,
    run_id: int | None,
    tool_call_id: int | None,
    toolset_id: int | None,
    toolset_name: str,
    mode: str,
    message: str,
    requested_schema: dict[str, Any] | None = None,
    url: str = "",
    timeout_seconds: float,
) -> Elicitation:
    """Record a server's question as waiting on the session's people (listed in their inbox,
    shown on the session page) until `timeout_seconds` from now. A form's schema must be one
    the specification allows (`planboard.elicitation.check_schema`), a URL http(s); anything
    else raises `PlanError` and records nothing."""
    text, schema, url = _checked_question(mode, message, requested_schema, url)
    with transaction.atomic():
        _lock_session(session_id)
        row = Elicitation.objects.create(
            session_id=session_id,
            run_id=run_id,
            tool_call_id=tool_call_id,
            toolset_id=toolset_id,
            toolset_name=toolset_name[:200],
            mode=mode,
            message=text,
            requested_schema=schema,
            url=url,
            expires_at=timezone.now() + timedelta(seconds=max(1.0, timeout_seconds)),
        )
        return _ask(row)


def elicitation_answer(
    *,
    elicitation_id: int,
    user: User,
    action: str,
    content: Any = None,
    channel: str = Channel.BROWSER,
) -> Elicitation:
    """A person answers a waiting elicitation: `accept` (with `content` for a form, checked
    against its schema), `decline` or `cancel`. The session's owner, the people they named
    to answer it, or staff allowed to change sessions may; once only. The last answer a
    run paused for (a question of a parked call's round) queues the run again."""
    if action not in ACTIONS:
        raise PlanError("'action' must be 'accept', 'decline' or 'cancel'.")
    found = (
        Elicitation.objects.filter(pk=elicitation_id)
        .values_list("session_id", "input_round__run_id")
        .first()
    )
    if found is None:
        raise PlanError(f"There is no elicitation {elicitation_id}.", code="not_found")
    with transaction.atomic():
        session = _lock_session(found[0])
        if not selectors.can_answer_session(user, session.owner_id, session_id=session.pk):
            raise Forbidden(
                "Only the session's owner, the people they named to answer it, or staff "
                "allowed to change sessions answer its tools' questions."
            )
        # A parked call's question: answering it may resume the run (locked before the row).
        run = (
            AgentRun.objects.select_for_update(no_key=True).filter(pk=found[1]).first()
            if found[1] is not None
            else None
        )
        if run is not None:
            refuse_if_owner_inactive(session, user)
        row = (
            Elicitation.objects.select_for_update(no_key=True, of=("self",))
            .select_related("tool_call", "answered_by")
            .get(pk=elicitation_id)
        )
        if row.status != Elicitation.Status.PENDING:
            raise PlanError(
                f"This question is no longer waiting for an answer (it is {row.status}).",
                code="already_decided",
            )
        if row.expires_at <= timezone.now():
            raise PlanError(
                "This question is no longer waiting for an answer (its time ran out).",
                code="already_decided",
            )
        status, choice = ACTIONS[action]
        answer: dict[str, Any] | None = None
        if action == "accept" and row.mode == Elicitation.Mode.FORM:
            answer = check_content(row.requested_schema or {}, {} if content is None else content)
        elif content not in (None, {}):
            raise PlanError("'content' goes only with 'accept' of a form.", code="invalid_answer")
        row.status = status
        row.content = answer
        row.answered_by = user
        row.answered_via = channel
        row.answered_at = timezone.now()
        row.save(update_fields=["status", "content", "answered_by", "answered_via", "answered_at"])
        _publish(row)
        _record_decision(
            session=session,
            kind=Decision.Kind.ELICITATION,
            decision=choice,
            user=user,
            channel=channel,
            run_id=row.run_id,
            tool_call=row.tool_call,
            elicitation=row,
            summary=_question_summary(row),
        )
        _inbox_changed(session.pk)
        if (
            run is not None
            and run.status == AgentRun.Status.WAITING_FOR_APPROVAL
            and not _calls_wait(run)
        ):
            _requeue(run)
    return row


def _take_down_questions(*, tool_call_id: int) -> None:
    """Inside the caller's transaction: a call's questions still pending when the call is
    tried again or answered after its worker died are void (nobody waits for their answer)."""
    rows = list(
        Elicitation.objects.select_for_update(no_key=True, of=("self",))
        .select_related("tool_call", "answered_by")
        .filter(tool_call_id=tool_call_id, status=Elicitation.Status.PENDING)
    )
    for row in rows:
        row.status = Elicitation.Status.CANCELLED
        row.answered_at = timezone.now()
        row.save(update_fields=["status", "answered_at"])
        _publish(row)
    if rows:
        _inbox_changed(rows[0].session_id)


def elicitation_close(*, elicitation_id: int, status: str) -> Elicitation | None:
    """The worker ends a wait nobody answered: `expired` (the time ran out: the server is
    told `decline`; recorded as a decline by nobody, through `expiry`) or `cancelled` (the
    run was cancelled, or the call ended first). Returns the row as it now is (answered
    meanwhile: unchanged), None when it is gone."""
    if status not in CLOSING:
        raise PlanError(f"An elicitation is closed as expired or cancelled, not {status!r}.")
    found = Elicitation.objects.filter(pk=elicitation_id).values_list("session_id", flat=True)
    if not found:
        return None
    with transaction.atomic():
        session = _lock_session(found[0])
        row = (
            Elicitation.objects.select_for_update(no_key=True, of=("self",))
            .select_related("tool_call", "answered_by")
            .get(pk=elicitation_id)
        )
        if row.status != Elicitation.Status.PENDING:
            return row
        row.status = status
        row.answered_at = timezone.now()
        row.save(update_fields=["status", "answered_at"])
        _publish(row)
        if status == Elicitation.Status.EXPIRED:
            _record_expiry(session, row)
        _inbox_changed(session.pk)
    return row
