"""What a run paused for people still waits on: its calls waiting for approval, and its calls
parked on their server's questions (`InputRound`). Shared by the services that pause a run,
resume it, and end its waits; each runs inside the caller's transaction, under its locks
(session, run, then tool-call rows, then rounds and their questions).
"""

from __future__ import annotations

from django.utils import timezone

from planboard import selectors
from planboard.models import (
    AgentRun,
    Channel,
    ChatSession,
    Decision,
    Elicitation,
    InputRound,
    ToolCall,
)
from planboard.services._core import _publish_session
from planboard.services._inbox import _inbox_changed, _record_decision

# A decision's summary of a question: the tool's name and the question's first line.
SUMMARY_MAX = 200


def _question_summary(row: Elicitation) -> str:
    first = (row.message.strip().splitlines() or [""])[0]
    who = row.toolset_name or "a tool"
    return f"{who}: {first}"[:SUMMARY_MAX]


def _record_expiry(session: ChatSession, question: Elicitation) -> None:
    """A question nobody answered in time: a decline by nobody, through `expiry`."""
    _record_decision(
        session=session,
        kind=Decision.Kind.ELICITATION,
        decision=Decision.Choice.DECLINE,
        user=None,
        channel=Channel.EXPIRY,
        run_id=question.run_id,
        tool_call=question.tool_call,
        elicitation=question,
        summary=_question_summary(question),
    )


def _publish_question(row: Elicitation) -> None:
    _publish_session(
        row.session_id,
        {"type": "session.elicitation", "elicitation": selectors.serialize_elicitation(row)},
    )


def _calls_wait(run: AgentRun) -> bool:
    """Whether some call of `run` still waits for a person: a decision, or an answer to a
    question of its server's `input_required` round."""
    if ToolCall.objects.filter(run=run, status=ToolCall.Status.PENDING).exists():
        return True
    return Elicitation.objects.filter(
        input_round__run=run,
        input_round__status=InputRound.Status.WAITING,
        input_round__expires_at__gt=timezone.now(),
        status=Elicitation.Status.PENDING,
    ).exists()


def _end_round(session: ChatSession, row: InputRound, status: str) -> None:
    """A waiting round ends unsent: `expired` (its questions too, each a decline by nobody
    through `expiry`) or `void` (its questions cancelled). What the server asked to be sent
    back is erased with it."""
    now = timezone.now()
    row.status = status
    row.carried = None
    row.finished_at = now
    row.save(update_fields=["status", "carried", "finished_at"])
    questions = list(
        Elicitation.objects.select_for_update(no_key=True, of=("self",))
        .select_related("tool_call", "answered_by")
        .filter(input_round=row, status=Elicitation.Status.PENDING)
    )
    for question in questions:
        expired = status == InputRound.Status.EXPIRED
        question.status = Elicitation.Status.EXPIRED if expired else Elicitation.Status.CANCELLED
        question.answered_at = now
        question.save(update_fields=["status", "answered_at"])
        _publish_question(question)
        if expired:
            _record_expiry(session, question)
    if questions:
        _inbox_changed(session.pk)


def _void_input_rounds(run: AgentRun) -> None:
    """The run stops waiting for its parked calls' answers (it was stopped, or someone wrote
    instead of answering): their rounds end unsent; each call is then answered as given up."""
    rounds = list(
        InputRound.objects.select_for_update(no_key=True, of=("self",))
        .select_related("session")
        .filter(run=run, status=InputRound.Status.WAITING)
    )
    for row in rounds:
        _end_round(row.session, row, InputRound.Status.VOID)
