"""MCP tasks (the official extension `io.modelcontextprotocol/tasks`, 2026-07-28): a tool
call the server runs as a task, created, polled and cancelled.

The client declares the extension (in every request's capabilities: `TasksExtension`, handed
to the SDK's `Client`), and the server may answer any `tools/call` with a task handle
(`resultType: "task"`) instead of its result. `tasks/get` answers the task's status, with the
final result (or the error) inlined once it is done; `tasks/cancel` asks the server to stop it.
A task that needs a person says `input_required` with its questions (`inputRequests`, the same
shapes as a call's `input_required` answer); their answers go back with `tasks/update`, and the
task works on. Questions for people park the call (`agents.mcp.input_required`), what needs no
person (roots) is answered at once.

The 2025-11-25 revision carried tasks in its core protocol (a `task` parameter on
`tools/call`); the SDK's client refuses that revision's task answer on `tools/call` (it
validates the answer as a `CallToolResult`), so a tool that a 2025-11-25 server runs only as a
task is listed as not supported (`planboard.services.tool_listing.TASK_ONLY`).

The SDK types the extension's results but does not drive them: this module sends the requests
through the SDK's session (`ClientSession.send_request`, so each has the session's deadline,
and the connection's size cap applies) and reads the answers warily (a server's task answer is
outside data: an unknown status, a task id that is not the one asked for, or "completed"
without a result, is a failure, never believed). A task's progress is its `statusMessage`.

What a poll says is a `TaskState` on the `ToolOutput` (`ToolOutput.task`); the run host
(`agents.task_polls`) polls with backoff and stores it on the tool call.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, NoReturn

from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, InputRequiredResult, Request, RequestParams, Result
from pydantic import ConfigDict, ValidationError

from agents import mcp_limits
from agents.mcp.input_required import InputNeeded, Refused, RoundLimit, input_rounds, next_round
from agents.mcp.outcome import TERMINAL, TaskState, ToolOutput, output_limit
from agents.redaction import redact_server_text
from planboard.models import Toolset

EXTENSION = "io.modelcontextprotocol/tasks"

STATUSES = ("working", "input_required", *TERMINAL)
# What a task's id and status message may be at most (longer ones are refused or cut).
TASK_ID_MAX = 200
MESSAGE_MAX = 300

UNFOLLOWED = (
    "Error: toolset '{toolset}': the server ran '{tool}' as a task, which only an agent run "
    "follows; the task was cancelled at the server."
)
INPUT_GIVEN_UP = (
    "Error: toolset '{toolset}': the task running '{tool}' was given up: {why}. The task was "
    "cancelled at the server."
)


class TaskCreated(Exception):
    """A `tools/call` answered with a task handle (raised through the SDK's claim resolver,
    caught by `calls.call_on`)."""

    def __init__(self, state: TaskState) -> None:
        super().__init__(state.task_id)
        self.state = state


class _Loose(Result):
    """A result read field by field (a server's task answers are checked by hand)."""

    model_config = ConfigDict(extra="allow")


class _CreatedTask(_Loose):
    """The 2026-07-28 task handle: `resultType: "task"` and the task's fields."""

    result_type: Literal["task"] = "task"


async def _created(result: _CreatedTask, context: ClaimContext) -> CallToolResult:
    raise TaskCreated(state_of(result.model_extra or {}, asked=None))


def claimed(result: Result) -> NoReturn:
    """A claimed shape answering a `tools/call` sent with `allow_claimed` (the input rounds are
    driven by hand, `agents.mcp.calls`): what the extension's resolver would do with it."""
    if isinstance(result, _CreatedTask):
        raise TaskCreated(state_of(result.model_extra or {}, asked=None))
    raise TaskAnswerInvalid(f"an unexpected result shape ({type(result).__name__})")


class TasksExtension(ClientExtension):
    """Declares the tasks extension; a task handle answering `tools/call` is turned into
    `TaskCreated` (the run host polls it, not the SDK)."""

    identifier = EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=_CreatedTask, resolve=_created)]


class _TaskParams(RequestParams):
    task_id: str


class _TaskRequest(Request[_TaskParams, Any]):
    # The task id routes the request to the server instance holding the task (`Mcp-Name`).
    name_param: ClassVar[str | None] = "taskId"
    params: _TaskParams


class _GetTask(_TaskRequest):
    method: Literal["tasks/get"] = "tasks/get"


class _CancelTask(_TaskRequest):
    method: Literal["tasks/cancel"] = "tasks/cancel"


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any]


class _UpdateTask(Request[_UpdateParams, Any]):
    name_param: ClassVar[str | None] = "taskId"
    method: Literal["tasks/update"] = "tasks/update"
    params: _UpdateParams


def state_of(raw: dict[str, Any], *, asked: str | None) -> TaskState:
    """The task a server described, checked: raises `TaskAnswerInvalid` for one that is not a
    task (no id, an id other than the one `asked` for, an unknown status)."""
    task_id = raw.get("taskId")
    if not isinstance(task_id, str) or not task_id or len(task_id) > TASK_ID_MAX:
        raise TaskAnswerInvalid("it gave no usable task id")
    if asked is not None and task_id != asked:
        raise TaskAnswerInvalid("it described another task than the one asked for")
    status = raw.get("status")
    if status not in STATUSES:
        raise TaskAnswerInvalid(f"its status {str(status)[:40]!r} is not a task status")
    message = raw.get("statusMessage")
    poll = raw.get("pollIntervalMs")
    return TaskState(
        task_id=task_id,
        status=str(status),
        message=message[: MESSAGE_MAX * 4] if isinstance(message, str) else "",
        poll_ms=int(poll) if isinstance(poll, int | float) and not isinstance(poll, bool) else None,
    )


class TaskAnswerInvalid(Exception):
    """A server's task answer that is not one (see `state_of`)."""


async def get_on(
    session: Client, toolset: Toolset, tool: str, task_id: str, *, rounds: int = 0
) -> ToolOutput:
    """One `tasks/get` on an open session: the task's state (`ToolOutput.task`), and once it
    is done its result for the model (cut, secrets removed) as the output's text. A server
    that refuses (it no longer knows the task) or answers with something that is not a task
    ends the task: the output says why, with status `failed`. A task asking for input
    (`rounds`: the rounds it took so far) hands its questions for people back
    (`ToolOutput.input_needed`), has what needs no person answered at once (`tasks/update`),
    or, past the round limit or asking what Planboard does not give, is not `ok`."""
    try:
        raw = await session.session.send_request(
            _GetTask(params=_TaskParams(task_id=task_id)), _Loose
        )
        fields = raw.model_extra or {}
        state = state_of(fields, asked=task_id)
        state = TaskState(
            task_id,
            state.status,
            redact_server_text(state.message, toolset)[:MESSAGE_MAX],
            state.poll_ms,
        )
        if state.status == "completed":
            return with_task(render(_tool_result(fields.get("result")), toolset, tool), state)
        if state.status == "failed":
            error = fields.get("error")
            reason = error.get("message") if isinstance(error, dict) else None
            text = redact_server_text(str(reason or state.message or "no reason given"), toolset)
            return ToolOutput(
                mcp_limits.cut(
                    f"Error: toolset '{toolset.name}': the tool '{tool}' failed: {text}"
                ),
                ok=False,
                task=state,
            )
        if state.status == "input_required":
            return await _asked(session, toolset, tool, state, fields, rounds=rounds + 1)
        if state.status == "cancelled":
            return ToolOutput(
                f"Error: toolset '{toolset.name}': the server cancelled the task running '{tool}'.",
                ok=False,
                task=state,
            )
        return ToolOutput("", ok=True, task=state)
    except (TaskAnswerInvalid, ValidationError) as invalid:
        why = str(invalid) if isinstance(invalid, TaskAnswerInvalid) else "its result is malformed"
        return _ended(toolset, tool, task_id, f"its answer about the task was not valid ({why})")
    except MCPError as refused:
        reason = redact_server_text(str(refused.error.message or "no reason given"), toolset)
        return _ended(toolset, tool, task_id, f"it refused to tell the task's status: {reason}")


async def _asked(
    session: Client,
    toolset: Toolset,
    tool: str,
    state: TaskState,
    fields: dict[str, Any],
    *,
    rounds: int,
) -> ToolOutput:
    """A task's `input_required`: its questions read like a call's (`next_round`)."""
    asked = InputRequiredResult.model_validate(
        {"resultType": "input_required", "inputRequests": fields.get("inputRequests") or {}}
    )
    if not asked.input_requests:
        raise TaskAnswerInvalid("it asked for input but asked nothing")
    try:
        step = await next_round(session, asked, rounds=rounds)
    except RoundLimit:
        why = f"its server asked for input more than {input_rounds()} times"
        return _given_up(toolset, tool, state, why)
    except Refused as refused:
        why = refused.message
        return _given_up(toolset, tool, state, why)
    if isinstance(step, InputNeeded):
        return ToolOutput("", True, task=state, input_needed=step)
    told = await update_on(session, state.task_id, step.responses)
    if not told.ok:
        why = redact_server_text(f"it refused the answers ({told.text})", toolset)
        return _given_up(toolset, tool, state, why)
    return ToolOutput("", True, task=state)


def _given_up(toolset: Toolset, tool: str, state: TaskState, why: str) -> ToolOutput:
    text = INPUT_GIVEN_UP.format(toolset=toolset.name, tool=tool, why=why)
    return ToolOutput(mcp_limits.cut(text), ok=False, task=state)


async def update_on(session: Client, task_id: str, responses: dict[str, Any]) -> ToolOutput:
    """`tasks/update` on an open session: the answers (JSON by key, as a call's
    `inputResponses`) to the questions the task asked."""
    try:
        await session.session.send_request(
            _UpdateTask(params=_UpdateParams(task_id=task_id, input_responses=responses)), _Loose
        )
    except MCPError as refused:
        return ToolOutput(f"{refused.error.message}"[:MESSAGE_MAX], ok=False)
    return ToolOutput("", ok=True)


def _ended(toolset: Toolset, tool: str, task_id: str, why: str) -> ToolOutput:
    text = f"Error: toolset '{toolset.name}': the task running '{tool}' was given up: {why}"
    return ToolOutput(mcp_limits.cut(text), ok=False, task=TaskState(task_id, "failed"))


def _tool_result(raw: Any) -> CallToolResult:
    if not isinstance(raw, dict):
        raise TaskAnswerInvalid("it said completed but gave no result")
    return CallToolResult.model_validate(raw)


def render(result: CallToolResult, toolset: Toolset, tool: str) -> ToolOutput:
    """A tool's result as the model gets it: cut to the output limit, secrets removed."""
    rendered = mcp_limits.render_result(result, keep=output_limit() + mcp_limits.REDACTION_ROOM)
    text = redact_server_text(rendered.text, toolset)
    if result.is_error:
        reason = text.strip() or "no reason given"
        return ToolOutput(
            f"Error: toolset '{toolset.name}': the tool '{tool}' failed: {reason}", ok=False
        )
    return ToolOutput(mcp_limits.cut(text, total=rendered.total, exact=rendered.exact), True)


def with_task(output: ToolOutput, state: TaskState) -> ToolOutput:
    return ToolOutput(output.text, output.ok, output.duration_ms, task=state)


async def cancel_on(session: Client, task_id: str) -> ToolOutput:
    """`tasks/cancel` on an open session (the server acknowledges; stopping is up to it)."""
    try:
        await session.session.send_request(_CancelTask(params=_TaskParams(task_id=task_id)), _Loose)
    except MCPError as refused:
        return ToolOutput(f"Error: {refused.error.message}"[:MESSAGE_MAX], ok=False)
    return ToolOutput("", ok=True)
