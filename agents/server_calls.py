"""One external call's trip to its server: in the chat session's live session with it
(`agents.mcp.sessions`) or on a connection of its own, with the session's workspace laid out as
the server's root where its toolset asks for that, its progress told to people, and anything
unexpected turned into an error result. `agents.external_tools` records and answers the call."""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from agents import elicitation, workspace_tree
from agents.mcp import calls, elicit, input_required, outcome, sessions
from agents.runtime.control import RunControl
from agents.runtime.lanes import Lane
from agents.tool_offers import offered_tools
from planboard import selectors, streams
from planboard.models import ToolCall, Toolset

logger = logging.getLogger(__name__)


def resource_refused(toolset: Toolset, uri: Any) -> str:
    """Why `read_resource` may not read `uri` from the toolset's server (empty: it may): the
    URI must be one the server lists, or fit one of its resource templates."""
    catalog = toolset.catalog or {}
    if not isinstance(uri, str) or not uri:
        return "Error: 'uri' is required: the exact URI of one of the listed resources."
    if any(r.get("uri") == uri for r in catalog.get("resources") or []):
        return ""
    for template in catalog.get("templates") or []:
        if resource_template_matches(str(template.get("uri_template") or ""), uri):
            return ""
    return (
        f"Error: toolset '{toolset.name}' lists no resource {uri[:300]!r}; read one of the "
        "resources listed in this tool's description. Nothing was read."
    )


def resource_template_matches(template: str, uri: str) -> bool:
    """Whether `uri` fits an RFC 6570 template such as `demo://text/{id}` (each expression
    stands for one path segment's worth of text: no `/`, `?` or `#`)."""
    pattern = "".join(
        "[^/?#]+" if part.startswith("{") else re.escape(part)
        for part in re.split(r"(\{[^}]*\})", template)
        if part
    )
    return bool(template) and re.fullmatch(pattern, uri) is not None


def server_output(record: ToolCall) -> outcome.ToolOutput:
    assert record.toolset is not None, "a claimed external call has its toolset"
    try:
        if record.reads_resource:
            uri = str((record.arguments or {}).get("uri"))
            return calls.read_resource(record.toolset, uri)
        return calls.call_tool(
            record.toolset, record.tool, record.arguments or {}, resume=resume_of(record)
        )
    except Exception as exc:
        return unexpected(record, exc)


async def aserver_output(
    record: ToolCall, *, lane: Lane, control: RunControl | None = None
) -> outcome.ToolOutput:
    """The call, in the chat session's live session with the server (`agents.mcp.sessions`,
    on the loop driving the run); `lane` asks the database, only when a session has to be
    opened, whether an earlier one of the conversation was lost, and polls the answer to a
    question the server asks a person meanwhile (`agents.elicitation`; `control`: the run's
    cancel ends that wait)."""
    assert record.toolset is not None, "a claimed external call has its toolset"

    async def used_before() -> bool:
        return await lane.run(
            selectors.toolset_called_before,
            session_id=record.session_id,
            toolset_id=record.toolset_id,
            call_id=record.pk,
        )

    files = None
    if record.toolset.roots == Toolset.Roots.WORKSPACE:
        files = workspace_tree.Sync(
            session_id=record.session_id,
            run_id=record.run_id,
            asks=workspace_asks(record),
            run_db=lane.run,
        )
    conversation = sessions.Conversation(record.session_id, used_before=used_before, files=files)
    try:
        if record.reads_resource:
            uri = str((record.arguments or {}).get("uri"))
            return await sessions.aread_resource(record.toolset, uri, conversation=conversation)
        return await sessions.acall_tool(
            record.toolset,
            record.tool,
            record.arguments or {},
            conversation=conversation,
            elicit=elicitation.asker(record, lane=lane, control=control),
            progress=progress_reporter(record, lane=lane),
            resume=resume_of(record),
        )
    except Exception as exc:
        return unexpected(record, exc)


def resume_of(record: ToolCall) -> input_required.Resume | None:
    carried = record.resumes_input
    if carried is None:
        return None
    return input_required.Resume(carried["responses"], carried["state"], carried["rounds"])


def workspace_asks(record: ToolCall) -> Callable[[str], bool]:
    """Whether a change a server made to the session's files in its tree must wait for a
    person, by the workspace tool that makes such a change (`write_file`, `delete_file`):
    when that tool would ask in this session (or is not offered there), unless a person
    approved this very call. Asked off the event loop (`agents.workspace_tree.collect`)."""
    found: dict[str, bool] = {}

    def asks(tool: str) -> bool:
        if record.decided_by_id is not None:
            return False
        if not found:
            for item in offered_tools(session_id=record.session_id):
                if item.tool.toolset.kind == Toolset.Kind.BUILTIN:
                    found[item.tool.name] = item.asks
            found.setdefault("", True)  # read once, even when nothing is offered
        return found.get(tool, True)

    return asks


# A chatty server's progress reaches people at most this often (the last one always does).
PROGRESS_EVERY_SECONDS = 0.25


def progress_reporter(record: ToolCall, *, lane: Lane) -> elicit.Progress:
    """What a call tells people of the progress its server reports: `tool.progress` events
    for the session (`planboard.streams`), sent off the loop in order, at most one per
    `PROGRESS_EVERY_SECONDS` unless the call is done."""
    last = [-PROGRESS_EVERY_SECONDS]

    def report(done: float, total: float | None, message: str | None) -> None:
        now = time.monotonic()
        finished = total is not None and done >= total
        if now - last[0] < PROGRESS_EVERY_SECONDS and not finished:
            return
        last[0] = now
        lane.post(
            functools.partial(
                streams.tool_progress,
                session_id=record.session_id,
                tool_call_id=record.tool_call_id,
                progress=done,
                total=total,
                message=message,
            )
        )

    return report


def unexpected(record: ToolCall, exc: Exception) -> outcome.ToolOutput:
    # The client turns every failure it knows into an Error result; anything else is a
    # bug there, and still must not take the run down (found by tests/system fuzzing).
    logger.exception("tool %s failed unexpectedly in run %s", record.tool_name, record.run_id)
    name = record.toolset.name if record.toolset is not None else "?"
    return outcome.ToolOutput(
        f"Error: toolset '{name}': the call failed unexpectedly "
        f"({type(exc).__name__}); its outcome is unknown.",
        ok=False,
    )
