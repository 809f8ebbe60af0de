"""A server's tools called, its resources read and its prompts got, their results as the
model may get them: cut to `PLANBOARD_TOOL_OUTPUT_LIMIT` (with a note saying so), secrets
removed, and never raising (`Error: …` text naming the toolset instead; `get_prompt`, the
prompt getter of `settings.PLANBOARD_TOOL_PROMPT_GETTER`, raises `PlanError`).

`call_on` and `read_on` act on an open session (a conversation's live one: `agents.mcp.sessions`);
`call_tool`, `acall_tool`, `read_resource`, `aread_resource` and `get_prompt` use a connection
of their own (`agents.mcp.connection`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from mcp import Client
from mcp.types import EmbeddedResource, ResourceLink, TextContent, TextResourceContents

from agents import mcp_limits
from agents.mcp import tasks
from agents.mcp.connection import once, used_once
from agents.mcp.elicit import Elicitor, Progress
from agents.mcp.oauth import oauth_for
from agents.mcp.outcome import (
    Failure,
    ToolOutput,
    output_limit,
    timeout_seconds,
)
from agents.mcp.transport import run_sync
from agents.redaction import redact_server_text
from planboard.exceptions import PlanError
from planboard.models import Toolset

# What failures of resources/read call the operation ("calling 'resources/read' failed").
READING = "resources/read"


def call_tool(toolset: Toolset, tool: str, arguments: dict[str, Any]) -> ToolOutput:
    """Call one tool; the result (or what went wrong) as text for the model."""
    return run_sync(lambda: acall_tool(toolset, tool, arguments))


async def acall_tool(
    toolset: Toolset, tool: str, arguments: dict[str, Any], *, elicit: Elicitor | None = None
) -> ToolOutput:
    """`call_tool` awaited on the caller's event loop: the wait for the server costs no
    thread. `elicit` answers what the server asks a person meanwhile (the call's clock stopped
    while they think); without it such a question is declined."""

    async def calling(session: Client) -> ToolOutput:
        # The connection's own deadline (which pauses for a person) bounds the call.
        output = await call_on(session, toolset, tool, arguments, read_timeout=math.inf)
        if output.task is None:
            return output
        # Only a run follows a task (`agents.task_polls`): this one is stopped at once.
        await tasks.cancel_on(session, output.task.task_id)
        return ToolOutput(tasks.UNFOLLOWED.format(toolset=toolset.name, tool=tool), ok=False)

    return await once(toolset, calling, tool=tool, elicitor=elicit)


async def call_on(
    session: Client,
    toolset: Toolset,
    tool: str,
    arguments: dict[str, Any],
    *,
    read_timeout: float | None = None,
    progress: Progress | None = None,
) -> ToolOutput:
    """One tools/call on an initialized session, its result as the model gets it (cut,
    secrets removed). `read_timeout`: the SDK's own limit on the wait for the answer
    (`PLANBOARD_TOOL_TIMEOUT` unless given; a live session gives `math.inf` and keeps the
    limit itself, with its clock stopped while a person answers the server's question).
    `progress`: told the server's progress notifications (the call then asks for them).
    A call the server turns into a task (the tasks extension, 2026-07-28) answers at once with
    the task (`ToolOutput.task`) and no text: the run host polls it (`agents.task_polls`)."""
    limit = timeout_seconds() if read_timeout is None else read_timeout
    reported = None
    if progress is not None:
        tell = progress

        async def reported(progress: float, total: float | None, message: str | None) -> None:
            tell(progress, total, message)

    try:
        result = await session.call_tool(
            tool, arguments, read_timeout_seconds=limit, progress_callback=reported
        )
    except tasks.TaskCreated as created:
        # The server runs the call as a task: the run host polls it (`agents.task_polls`).
        state = created.state
        message = redact_server_text(state.message, toolset)[: tasks.MESSAGE_MAX]
        return ToolOutput("", ok=True, task=replace(state, message=message))
    except tasks.TaskAnswerInvalid as invalid:
        raise Failure(
            f"toolset '{toolset.name}': the server's task answer was not valid: {invalid}"
        ) from None
    return tasks.render(result, toolset, tool)


async def read_on(session: Client, toolset: Toolset, uri: str) -> ToolOutput:
    """One resources/read on an initialized session: the contents as the model may get them
    (cut to `PLANBOARD_TOOL_OUTPUT_LIMIT`, binary contents described, secrets removed)."""
    result = await session.read_resource(uri)
    rendered = mcp_limits.render_contents(result, keep=output_limit() + mcp_limits.REDACTION_ROOM)
    text = redact_server_text(rendered.text, toolset)
    return ToolOutput(mcp_limits.cut(text, total=rendered.total, exact=rendered.exact), True)


def read_resource(toolset: Toolset, uri: str) -> ToolOutput:
    """Read one resource on a connection of its own (never raises: `Error: …` text)."""
    return run_sync(lambda: aread_resource(toolset, uri))


async def aread_resource(toolset: Toolset, uri: str) -> ToolOutput:
    """`read_resource` awaited on the caller's event loop."""
    return await once(toolset, lambda session: read_on(session, toolset, uri), tool=READING)


def get_prompt(toolset: Toolset, name: str, arguments: dict[str, str]) -> str:
    """A prompt's text (`settings.PLANBOARD_TOOL_PROMPT_GETTER`): prompts/get on a connection
    of its own, bounded by `PLANBOARD_TOOL_TIMEOUT`; its messages' text joined, anything else
    described, cut to `PLANBOARD_TOOL_OUTPUT_LIMIT`, secrets removed. Raises `PlanError`
    saying why the server could not give it."""

    async def getting(session: Client) -> str:
        result = await session.get_prompt(name, arguments)
        pieces: list[str] = []
        for message in result.messages:
            content = message.content
            if isinstance(content, TextContent):
                pieces.append(content.text)
            elif isinstance(content, EmbeddedResource):
                inner = content.resource
                if isinstance(inner, TextResourceContents):
                    pieces.append(inner.text)
                else:
                    uri = str(inner.uri)[: mcp_limits.URI_SHOWN]
                    pieces.append(f"[resource {uri} ({inner.mime_type or 'binary'})]")
            elif isinstance(content, ResourceLink):
                pieces.append(f"[resource: {str(content.uri)[: mcp_limits.URI_SHOWN]}]")
            else:
                pieces.append(f"[{content.type} omitted]")
            if sum(len(p) for p in pieces) > output_limit() + mcp_limits.REDACTION_ROOM:
                break
        return mcp_limits.cut(redact_server_text("\n\n".join(pieces), toolset))

    oauth = oauth_for(toolset)
    try:
        return run_sync(lambda: used_once(toolset, getting, tool="prompts/get", oauth=oauth))
    except Failure as failure:
        raise PlanError(failure.message, code="toolset_unreachable") from None
    finally:
        if oauth is not None:
            oauth.store_changed()
