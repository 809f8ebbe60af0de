"""A server's tools called, its resources read and its prompts got, their results as the
model may get them: cut to `PLANBOARD_TOOL_OUTPUT_LIMIT` (with a note saying so), secrets
removed, and never raising (`Error: …` text naming the toolset instead; `get_prompt`, the
prompt getter of `settings.PLANBOARD_TOOL_PROMPT_GETTER`, raises `PlanError`).

`call_on` and `read_on` act on an open session (a conversation's live one: `agents.mcp.sessions`);
`call_tool`, `acall_tool`, `read_resource`, `aread_resource`, `get_prompt` and `cancel_task` use a
connection of their own (`agents.mcp.connection`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import (
    HEADER_MISMATCH,
    CallToolResult,
    EmbeddedResource,
    InputRequiredResult,
    InputResponses,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from agents import mcp_limits
from agents.mcp import tasks
from agents.mcp.connection import once, used_once
from agents.mcp.elicit import Elicitor, Progress
from agents.mcp.input_required import (
    InputNeeded,
    Refused,
    Resume,
    RoundLimit,
    input_rounds,
    next_round,
    responses_of,
)
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


def call_tool(
    toolset: Toolset, tool: str, arguments: dict[str, Any], *, resume: Resume | None = None
) -> ToolOutput:
    """Call one tool; the result (or what went wrong) as text for the model. `resume`: a
    call parked on `input_required`, sent again with its answers."""
    return run_sync(lambda: acall_tool(toolset, tool, arguments, resume=resume))


async def acall_tool(
    toolset: Toolset,
    tool: str,
    arguments: dict[str, Any],
    *,
    elicit: Elicitor | None = None,
    resume: Resume | None = None,
) -> ToolOutput:
    """`call_tool` awaited on the caller's event loop: the wait for the server costs no
    thread. `elicit` answers what the server asks a person meanwhile (the call's clock stopped
    while they think); without it such a question is declined."""

    async def calling(session: Client) -> ToolOutput:
        # The connection's own deadline (which pauses for a person) bounds the call.
        output = await call_on(
            session, toolset, tool, arguments, read_timeout=math.inf, resume=resume
        )
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
    resume: Resume | None = None,
) -> ToolOutput:
    """One tools/call on an initialized session, its result as the model gets it (cut,
    secrets removed). `read_timeout`: the SDK's own limit on the wait for the answer
    (`PLANBOARD_TOOL_TIMEOUT` unless given; a live session gives `math.inf` and keeps the
    limit itself, with its clock stopped while a person answers the server's question).
    `progress`: told the server's progress notifications (the call then asks for them).
    An `input_required` answer that asks people something is handed back unanswered
    (`ToolOutput.input_needed`: the caller parks the call); `resume` sends a parked call
    again with its answers. A call the server turns into a task (the tasks extension,
    2026-07-28) answers at once with the task (`ToolOutput.task`) and no text: the run host
    polls it (`agents.task_polls`)."""
    limit = timeout_seconds() if read_timeout is None else read_timeout
    reported = None
    if progress is not None:
        tell = progress

        async def reported(progress: float, total: float | None, message: str | None) -> None:
            tell(progress, total, message)

    rounds = resume.rounds if resume is not None else 0
    responses, state = responses_of(resume), resume.state if resume is not None else None
    while True:
        try:
            result = await _send(session, tool, arguments, limit, reported, responses, state)
        except tasks.TaskCreated as created:
            # The server runs the call as a task: the run host polls it (`agents.task_polls`).
            task = created.state
            message = redact_server_text(task.message, toolset)[: tasks.MESSAGE_MAX]
            return ToolOutput("", ok=True, task=replace(task, message=message))
        except tasks.TaskAnswerInvalid as invalid:
            raise Failure(
                f"toolset '{toolset.name}': the server's task answer was not valid: {invalid}"
            ) from None
        if isinstance(result, CallToolResult):
            break
        try:
            step = await next_round(session, result, rounds=rounds + 1)
        except RoundLimit:
            return _failed(
                toolset,
                tool,
                f"its server asked for input more than {input_rounds()} times; the call was "
                "given up",
            )
        except Refused as refused:
            return _failed(toolset, tool, refused.message)
        if isinstance(step, InputNeeded):
            return ToolOutput("", True, input_needed=step)
        rounds, responses, state = step.rounds, responses_of(step), step.state
    return tasks.render(result, toolset, tool)


def cancel_task(toolset: Toolset, task_id: str) -> ToolOutput:
    """`tasks/cancel` on a connection of its own (a task nobody follows any more)."""

    async def cancelling(session: Client) -> ToolOutput:
        return await tasks.cancel_on(session, task_id)

    return run_sync(lambda: once(toolset, cancelling, tool="tasks/cancel"))


def _failed(toolset: Toolset, tool: str, reason: str) -> ToolOutput:
    return ToolOutput(
        f"Error: toolset '{toolset.name}': the tool '{tool}' failed: {reason}", ok=False
    )


async def _send(
    session: Client,
    tool: str,
    arguments: dict[str, Any],
    limit: float,
    reported: Any,
    responses: InputResponses | None,
    state: str | None,
) -> CallToolResult | InputRequiredResult:
    """One tools/call, an `input_required` answer handed back rather than driven in memory
    (the SDK's `Client.call_tool` would wait for people on this worker). A 2026-07-28 server
    that says the tool's listing is stale gets it listed again and the call once more."""
    for attempt in range(2):
        try:
            result = await session.session.call_tool(
                tool,
                arguments,
                read_timeout_seconds=limit,
                progress_callback=reported,
                input_responses=responses,
                request_state=state,
                allow_input_required=True,
                allow_claimed=True,  # a task handle (the tasks extension) ends any round
            )
        except MCPError as error:
            if error.code != HEADER_MISMATCH or attempt:
                raise
            await session.list_tools(cache_mode="refresh")
            continue
        if isinstance(result, CallToolResult | InputRequiredResult):
            return result
        tasks.claimed(result)
    raise AssertionError("unreachable")  # pragma: no cover


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
