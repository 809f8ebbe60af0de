"""A server's question to a person during a run's tool call (MCP elicitation).

`asker` makes the `Elicitor` a call hands to its live session (`agents.mcp.sessions`): when
the server sends `elicitation/create`, the question is recorded (`services.elicitation_open`:
shown on the session page and in the inbox of the people who may answer), and the call waits
for the answer by polling it every `POLL_SECONDS` in a short unit of the run's lane — no
transaction, lock or connection of the run is held while a person thinks. It ends with:

- the person's answer (accept with the form's values, decline, cancel), as given;
- `decline` once `PLANBOARD_ELICITATION_TIMEOUT` seconds pass unanswered (the record is marked
  `expired`, a decline by nobody through `expiry`);
- `cancel` when the run is cancelled (asked in the database, or the run host's cancel) or its
  worker hands it off (the record is marked `cancelled`);
- an error to the server when its form is not one the specification allows.

The call's own `PLANBOARD_TOOL_TIMEOUT` is stopped meanwhile (`sessions._Live._on_elicit`):
it measures the server, and a person's time is bounded by the elicitation timeout instead.
"""

from __future__ import annotations

import asyncio
import logging

import anyio

from agents.mcp.elicit import Elicited, Elicitor, ElicitReply, elicitation_seconds
from agents.runtime.control import RunControl
from agents.runtime.lanes import Lane
from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import Elicitation, ToolCall

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.5
ANSWERED: dict[str, str] = {
    Elicitation.Status.ACCEPTED: "accept",
    Elicitation.Status.DECLINED: "decline",
    Elicitation.Status.CANCELLED: "cancel",
    Elicitation.Status.EXPIRED: "decline",
}


def asker(record: ToolCall, *, lane: Lane, control: RunControl | None = None) -> Elicitor:
    """The elicitor of one claimed call: its questions go to the people of its session."""

    async def ask(asked: Elicited) -> ElicitReply:
        return await ask_person(asked, record=record, lane=lane, control=control)

    return ask


def _stopping(control: RunControl | None) -> bool:
    return control is not None and (control.cancelled or control.handing_off)


async def ask_person(
    asked: Elicited, *, record: ToolCall, lane: Lane, control: RunControl | None = None
) -> ElicitReply:
    """Record the question, wait for its answer (or the time limit, or the run's stop), and
    say what the server is told."""
    toolset = record.toolset
    limit = elicitation_seconds()
    try:
        row = await lane.run(
            services.elicitation_open,
            session_id=record.session_id,
            run_id=record.run_id,
            tool_call_id=record.pk,
            toolset_id=record.toolset_id,
            toolset_name=toolset.name if toolset is not None else "",
            mode=asked.mode,
            message=asked.message,
            requested_schema=asked.schema,
            url=asked.url,
            timeout_seconds=limit,
        )
    except PlanError as exc:
        return ElicitReply("decline", error=exc.message)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    try:
        while True:
            status, content, cancel = await lane.run(
                selectors.elicitation_wait_state, elicitation_id=row.pk, run_id=record.run_id
            )
            if status in ANSWERED:
                return ElicitReply(ANSWERED[status], content)
            if cancel or _stopping(control):
                return await _closed(lane, row.pk, Elicitation.Status.CANCELLED)
            if loop.time() >= deadline:
                return await _closed(lane, row.pk, Elicitation.Status.EXPIRED)
            await asyncio.sleep(min(POLL_SECONDS, max(0.0, deadline - loop.time())))
    except BaseException:
        # The call ended under the wait (the session closed, the worker stopped): nobody can
        # answer any more, so the question is taken down.
        with anyio.CancelScope(shield=True):
            try:
                await lane.run(
                    services.elicitation_close,
                    elicitation_id=row.pk,
                    status=Elicitation.Status.CANCELLED,
                )
            except Exception:
                logger.warning("closing elicitation %s failed", row.pk, exc_info=True)
        raise


async def _closed(lane: Lane, elicitation_id: int, status: str) -> ElicitReply:
    """Close the question unanswered; an answer that came in meanwhile wins."""
    row = await lane.run(services.elicitation_close, elicitation_id=elicitation_id, status=status)
    if row is not None and row.status in ANSWERED:
        return ElicitReply(ANSWERED[row.status], row.content)
    return ElicitReply("decline")
