"""Reads of elicitations: the questions MCP servers ask people during tool calls."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from planboard.models import AgentRun, Elicitation
from planboard.snapshots import iso


def elicitation_key(elicitation_id: int) -> str:
    """The inbox's key of an elicitation."""
    return f"elicitation:{elicitation_id}"


def serialize_elicitation(row: Elicitation) -> dict[str, Any]:
    """An elicitation as the session page, the API and the socket show it. `message`, the
    schema's titles and `url` come from the server: data, shown as text only."""
    return {
        "id": row.pk,
        "session_id": row.session_id,
        "run_id": row.run_id,
        "tool_call_id": row.tool_call.tool_call_id if row.tool_call is not None else None,
        "tool_name": row.tool_call.tool_name if row.tool_call is not None else None,
        "toolset": row.toolset_name,
        "mode": row.mode,
        "message": row.message,
        "requested_schema": row.requested_schema,
        "url": row.url,
        "status": row.status,
        "content": row.content,
        "answered_by": row.answered_by.get_username() if row.answered_by else None,
        "answered_via": row.answered_via,
        "answered_at": iso(row.answered_at),
        "created_at": iso(row.created_at),
        "expires_at": iso(row.expires_at),
    }


def _rows(**filters: Any) -> Any:
    return (
        Elicitation.objects.filter(**filters)
        .select_related("tool_call", "answered_by")
        .order_by("id")
    )


def session_elicitations(*, session_id: int, status: str | None = None) -> list[dict[str, Any]]:
    """The session's elicitations (or those with `status`), oldest first."""
    filters: dict[str, Any] = {"session_id": session_id}
    if status:
        filters["status"] = status
    return [serialize_elicitation(row) for row in _rows(**filters)]


def pending_elicitations(*, session_id: int) -> list[dict[str, Any]]:
    """The session's questions still waiting for an answer (not past their time: one whose
    worker died unanswered is no longer shown)."""
    rows = _rows(
        session_id=session_id,
        status=Elicitation.Status.PENDING,
        expires_at__gt=timezone.now(),
    )
    return [serialize_elicitation(row) for row in rows]


def elicitation_row(*, elicitation_id: int) -> Elicitation | None:
    return _rows(pk=elicitation_id).first()


def elicitation_wait_state(
    *, elicitation_id: int, run_id: int | None
) -> tuple[str, dict[str, Any] | None, bool]:
    """What a worker waiting on an elicitation polls: its status, the answer's content, and
    whether its run was asked to stop (two short reads, no lock)."""
    found = Elicitation.objects.filter(pk=elicitation_id).values_list("status", "content").first()
    status, content = found if found is not None else (Elicitation.Status.CANCELLED, None)
    cancel = bool(
        run_id is not None and AgentRun.objects.filter(pk=run_id, cancel_requested=True).exists()
    )
    return status, content, cancel
