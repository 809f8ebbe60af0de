"""Resources a person attached to a message: read by the run from their servers,
before its next model call, and stored in the transcript as data from that server.

A person's message carries references only (`Message.attachments`: toolset and URI, checked
when it was posted). The run driving the session finds the ones without contents yet in the
transcript it reads anyway (no query when there are none), reads each through the
conversation's live MCP session with the server (`agents.mcp.sessions`, as a tool call does,
bounded like a tool result: `PLANBOARD_TOOL_OUTPUT_LIMIT`, secrets removed), and stores what
it read as a message of its own (`services.message_record_attachment`, once per attachment).
The model gets it framed by Planboard (`agents.context`): which server it comes from, that it
is data and not the person's words, between two fence lines carrying a random token the
server never saw, with anything that reads as a hint tag defused.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from agents.mcp import outcome, sessions
from agents.runtime.lanes import Lane
from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import AgentRun, Message, Toolset
from planboard.services.attachments import attachment_call_id


@dataclass
class Reading:
    message_id: int
    index: int
    uri: str
    toolset: Toolset | None  # as called (the owner's credential); None: not usable now
    refused: str = ""  # why it is not read (then `toolset` is None)


@dataclass
class Attachments:
    """The attachments a run reads before its next model call."""

    run: AgentRun
    readings: list[Reading] = field(default_factory=list)


def to_read(*, run: AgentRun, transcript: list[Message]) -> Attachments | None:
    """The transcript's attachments not read yet (None: none), their toolsets loaded as the
    session's calls reach them."""
    done = {m.tool_call_id for m in transcript if m.attachment}
    unread = [
        (m.pk, index, ref)
        for m in transcript
        if m.role == Message.Role.USER and m.attachments
        for index, ref in enumerate(m.attachments)
        if attachment_call_id(m.pk, index) not in done
    ]
    if not unread:
        return None
    in_use = {t.pk for t in selectors.session_toolsets_in_use(session_id=run.session_id)}
    found = Attachments(run=run)
    for message_id, index, ref in unread:
        toolset_id, uri = ref.get("toolset_id"), str(ref.get("uri", ""))
        toolset = Toolset.objects.filter(pk=toolset_id).first() if toolset_id in in_use else None
        if toolset is not None:
            toolset = selectors.toolset_as_called(toolset, session_id=run.session_id)
        if toolset is None:
            refused = (
                f"Error: toolset '{ref.get('toolset')}' is no longer enabled in this session "
                "(or its owner has no credential for it, or was deactivated); the resource was not "
                "read."
            )
            found.readings.append(Reading(message_id, index, uri, None, refused))
        else:
            found.readings.append(Reading(message_id, index, uri, toolset))
    return found


async def read_and_store(attachments: Attachments, *, lane: Lane) -> None:
    """Read each attachment from its server (no database work open meanwhile), then store
    it; one stored meanwhile by another worker stays as it was."""
    run = attachments.run
    for reading in attachments.readings:
        if reading.toolset is None:
            output = outcome.ToolOutput(reading.refused, ok=False)
        else:
            conversation = sessions.Conversation(run.session_id)
            output = await sessions.aread_resource(
                reading.toolset, reading.uri, conversation=conversation
            )
            if output.oauth_tokens is not None:
                await lane.run(
                    services.toolset_oauth_tokens_store,
                    toolset_id=reading.toolset.pk,
                    user_id=reading.toolset.oauth_user_id,
                    tokens=output.oauth_tokens,
                    replacing=output.oauth_replaces or {},
                )
        await lane.run(_store, run, reading, output)


def _store(run: AgentRun, reading: Reading, output: outcome.ToolOutput) -> None:
    try:
        services.message_record_attachment(
            session_id=run.session_id,
            run_id=run.pk,
            message_id=reading.message_id,
            index=reading.index,
            content=output.text,
            ok=output.ok,
            fence=f"===== resource data {secrets.token_hex(8)} =====",
        )
    except PlanError as exc:
        if exc.code not in ("duplicate_tool_call", "not_found"):
            raise
