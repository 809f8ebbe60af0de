"""What a use of a toolset's server gives back: the model's text (`ToolOutput`), or why the
server could not be used (`Failure`), in words for people and models, secrets removed.

Every failure is told apart here, once: a timeout, an address `planboard.outbound` refuses, a
program that cannot start, an unreachable server, a server that stopped (quoting the end of its
stderr), a refusal (the server's error answer on a connection that still works) and a session
the server no longer knows (it may be opened again and the request resent).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import httpx2
from django.conf import settings
from mcp.shared.exceptions import MCPError
from mcp.types import (
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ToolListChangedNotification,
)

from agents import mcp_limits
from agents.redaction import redact_server_text
from planboard import outbound
from planboard.models import Toolset

if TYPE_CHECKING:
    from agents.mcp.input_required import InputNeeded

logger = logging.getLogger(__name__)

# How much of a crashed server's stderr an error message quotes.
STDERR_TAIL = 300


# The statuses that end an MCP task (`agents.mcp.tasks`).
TERMINAL = ("completed", "failed", "cancelled")


@dataclass(frozen=True)
class TaskState:
    """What the server last said of a task."""

    task_id: str
    status: str  # working, input_required, completed, failed or cancelled
    message: str = ""  # the server's status message (its progress), cut, secrets removed
    poll_ms: int | None = None  # the server's suggested polling interval

    @property
    def done(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class ToolOutput:
    """What a call gives the model (`text`), and whether the tool did its job (`ok`)."""

    text: str
    ok: bool
    duration_ms: int = 0
    # An OAuth toolset whose tokens changed during the call (refreshed; or `{}`: the provider
    # refused them and the person must connect again): stored by the caller, in a unit, only
    # over the stored tokens the call started from (`oauth_replaces`): another call may have
    # stored newer ones meanwhile (`services.toolset_oauth_tokens_store`).
    oauth_tokens: dict[str, Any] | None = None
    oauth_replaces: dict[str, Any] | None = None
    # The server answered `input_required` (2026-07-28): no result yet; the caller parks the
    # call on these questions (`agents.mcp.input_required`). `text` is empty then.
    input_needed: InputNeeded | None = None
    # A call the server runs as an MCP task: what it last said of the task; the text is the
    # result only once the task is done.
    task: TaskState | None = None


def timeout_seconds() -> float:
    return float(getattr(settings, "PLANBOARD_TOOL_TIMEOUT", 60))


output_limit = mcp_limits.output_limit


def unexpected(toolset: Toolset, tool: str, exc: BaseException) -> ToolOutput:
    logger.exception("calling %s of toolset %s failed", tool, toolset.name, exc_info=exc)
    return ToolOutput(
        f"Error: toolset '{toolset.name}': calling '{tool}' failed unexpectedly "
        f"({type(exc).__name__}).",
        ok=False,
    )


def finished(output: ToolOutput, started: float) -> ToolOutput:
    """`output` with the call's duration; an error quoting the server cut (a result was cut
    when it was rendered)."""
    elapsed = int((time.monotonic() - started) * 1000)
    text = output.text if output.ok else mcp_limits.cut(output.text)
    return ToolOutput(
        text,
        ok=output.ok,
        duration_ms=elapsed,
        input_needed=output.input_needed,
        task=output.task,
    )


class Failure(Exception):
    """Why a toolset could not be used, in words for people and models."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def failure_of(
    exc: BaseException,
    toolset: Toolset,
    *,
    tool: str,
    errlog: IO[str],
    reading: mcp_limits.ReadLimit,
) -> Failure:
    """What went wrong with a connection, for people and models."""
    if reading.exceeded:  # whatever the SDK made of it, this is what happened
        return Failure(redact_server_text(reading.describe(toolset.name), toolset))
    return Failure(describe(exc, toolset, tool=tool, stderr=stderr_tail(errlog)))


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups of the SDK's task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def is_refusal(exc: BaseException) -> bool:
    """Whether a call's error is the server's answer (unknown tool, bad arguments) on a
    connection that still works, rather than a timeout or the connection gone. (A session
    the server no longer knows is told by the HTTP status: `transport.SessionLoss`.)"""
    error = leaf(exc)
    if not isinstance(error, MCPError):
        return False
    message = error.message.lower()
    return "closed" not in message and "timed out" not in message


def is_tools_changed(message: Any) -> bool:
    """Whether what a server sent unasked says its tools, resources or prompts changed (a
    refresh lists all three)."""
    return isinstance(
        message,
        ToolListChangedNotification
        | ResourceListChangedNotification
        | PromptListChangedNotification,
    )


def describe(exc: BaseException, toolset: Toolset, *, tool: str, stderr: str) -> str:
    """`toolset '<name>': <what went wrong>`, secrets removed."""
    error = leaf(exc)
    who = f"toolset '{toolset.name}': "
    what = f"the tool '{tool}'" if tool else "the server"
    if isinstance(error, TimeoutError) or (
        isinstance(error, MCPError) and "timed out" in error.message
    ):
        message = (
            f"{what} did not answer within {timeout_seconds():g} seconds; the call was "
            "abandoned (it may or may not have taken effect)."
        )
    elif isinstance(error, outbound.AddressRefused):
        message = f"its server is not reachable from here: {error.message}"
    elif toolset.kind == Toolset.Kind.STDIO and isinstance(error, OSError):
        reason = error.strerror or str(error)
        message = f"could not start its server ('{toolset.command}'): {reason}."
    elif isinstance(error, httpx2.HTTPError):
        message = f"the server could not be reached ({type(error).__name__}: {error})."
    elif isinstance(error, MCPError) and "closed" in error.message.lower():
        message = "the server stopped unexpectedly (the connection closed)."
        if stderr:
            message += f" Its last words: {stderr}"
    elif isinstance(error, MCPError):
        message = f"the server refused: {error.message.rstrip('.')}."
    else:
        message = f"{what} failed ({type(error).__name__}: {error})."
    return redact_server_text(who + message, toolset)


def stderr_tail(errlog: IO[str]) -> str:
    # Only the end of the file is read: a server may have written gigabytes to stderr.
    text = mcp_limits.file_tail(errlog, STDERR_TAIL * 4)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " / ".join(lines[-3:])[-STDERR_TAIL:]
