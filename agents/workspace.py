"""The built-in `workspace` toolset's tools, run in-process: thin adapters over the workspace
services and selectors, answering text for the model (`Error: …` when a call cannot be done).

`agents.external_tools` offers, records and approves these calls like any toolset's; it hands
an approved call here instead of to an MCP server. The effect (a file written or deleted) and
the call's result commit together, so a call is done exactly once even if a worker dies.
"""

from __future__ import annotations

import time
from typing import Any

from django.db import transaction

from agents.mcp.outcome import ToolOutput, output_limit
from planboard import selectors, services, workspace
from planboard.exceptions import PlanError
from planboard.models import AgentRun, ToolCall


def run_call(*, run: AgentRun, record: ToolCall) -> None:
    """Do a claimed call and store its result with its final status, in one transaction."""
    started = time.monotonic()
    with transaction.atomic():
        output = call_tool(run=run, tool=record.tool, arguments=record.arguments or {})
        status = ToolCall.Status.SUCCEEDED if output.ok else ToolCall.Status.FAILED
        services.tool_call_answer(
            record_id=record.pk,
            content=output.text,
            status=status,
            duration_ms=int((time.monotonic() - started) * 1000),
        )


def policy_stand_in(*, session_id: int, tool: str, arguments: dict[str, Any]) -> str | None:
    """The built-in tool whose policy this call must follow instead of its own (None: its
    own). Emptying a file that holds content is deleting what it held, so such a `write_file`
    follows `delete_file`'s policy."""
    stand_in = workspace.discarding_follows(tool)
    if stand_in is None:
        return None
    try:
        path = workspace.clean_path(arguments.get("path"))
    except PlanError:
        return None  # the call fails on its path anyway, discarding nothing
    file = selectors.workspace_file(session_id=session_id, path=path)
    existing = file.size if file is not None else None
    return stand_in if workspace.discards_content(arguments.get("content"), existing) else None


def call_tool(*, run: AgentRun, tool: str, arguments: dict[str, Any]) -> ToolOutput:
    handler = _HANDLERS.get(tool)
    if handler is None:
        names = ", ".join(sorted(_HANDLERS))
        return ToolOutput(f"Error: the workspace has no tool {tool!r}; it has: {names}.", ok=False)
    unknown = sorted(set(arguments) - _ARGUMENTS[tool])
    if unknown:
        return ToolOutput(
            f"Error: {tool} takes no argument named {', '.join(map(repr, unknown))}.", ok=False
        )
    try:
        return ToolOutput(handler(run, arguments), ok=True)
    except PlanError as exc:
        return ToolOutput(f"Error: {exc.message}", ok=False)


def _write(run: AgentRun, arguments: dict[str, Any]) -> str:
    content = arguments.get("content")
    if not isinstance(content, str):
        raise PlanError("'content' must be text.")
    file = services.workspace_file_write(
        session_id=run.session_id,
        path=workspace.clean_path(arguments.get("path")),
        content=content,
        run_id=run.pk,
    )
    return (
        f"Wrote {file.path} ({file.size} bytes). People can download it from the session's files."
    )


def _read(run: AgentRun, arguments: dict[str, Any]) -> str:
    path = workspace.clean_path(arguments.get("path"))
    file = selectors.workspace_file(session_id=run.session_id, path=path)
    if file is None:
        raise PlanError(f"the workspace has no file {path!r}. {_listing(run.session_id)}")
    limit = output_limit()
    with selectors.workspace_file_open(file) as handle:
        text, total = workspace.read_text_head(handle, limit)
    if total > limit:
        return text + f"\n\n[Cut: {path} has {total} characters; only the first {limit} are shown.]"
    return text


def _list(run: AgentRun, arguments: dict[str, Any]) -> str:
    return _listing(run.session_id)


def _delete(run: AgentRun, arguments: dict[str, Any]) -> str:
    path = workspace.clean_path(arguments.get("path"))
    try:
        services.workspace_file_delete(session_id=run.session_id, path=path)
    except PlanError as exc:
        if exc.code != "not_found":
            raise
        raise PlanError(f"the workspace has no file {path!r}. {_listing(run.session_id)}") from None
    return f"Deleted {path}."


def _listing(session_id: int) -> str:
    files = selectors.session_files(session_id=session_id)
    if not files:
        return "The workspace is empty."
    lines = [f"- {f['path']} ({f['size']} bytes, updated {f['updated_at']})" for f in files]
    return "Files in the workspace:\n" + "\n".join(lines)


_HANDLERS = {"write_file": _write, "read_file": _read, "list_files": _list, "delete_file": _delete}
_ARGUMENTS: dict[str, set[str]] = {
    t["name"]: set(t["input_schema"].get("properties", {})) for t in workspace.TOOLS
}
