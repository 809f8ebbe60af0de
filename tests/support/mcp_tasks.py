"""The MCP tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28) served by the SDK's
own server, for tests: `TaskBoard` is an SDK server `Extension` whose tool `research` runs
only as a task, and which serves `tasks/get`, `tasks/update` and `tasks/cancel`.

    board = TaskBoard()
    with RevisionServer("modern", extensions=[board]) as server:
        ...

A task moves one step each time it is polled, never with the clock (tests are not timed):
`research(topic, polls=2)` answers `working` with "N%" as its status message until the
`polls`-th `tasks/get`, which answers `completed` with "Report on <topic>." as its result.
`behaviour` makes the server hostile or odd at that point (see `BEHAVIOURS`). The board
outlives a server's restart (a task is durable: the server keeps it), and records what was
asked of it: `created`, `gets`, `cancelled`, `updates` (each task's answers on the task).
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from mcp.server.extension import Extension, MethodBinding, ToolBinding
from mcp.shared.exceptions import MCPError
from mcp.types import CLIENT_CAPABILITIES_META_KEY, RequestParams

from tests.support.scripted import ScriptedModel, call, say, tool_calls

IDENTIFIER = "io.modelcontextprotocol/tasks"
TOOL = "remote__research"  # the board's tool as the model is offered it (toolset `remote`)
MISSING_CAPABILITY = -32021
INVALID_PARAMS = -32602
STAMP = "2026-01-01T00:00:00Z"

# What `behaviour` makes the server do when the task is due to finish:
BEHAVIOURS = {
    "": "complete with the report",
    "never": "stay working forever",
    "no_result": "say completed, with no result",
    "unknown_status": "answer a status that is not a task status",
    "other_task": "describe another task than the one asked for",
    "huge": "complete with a result of `size` characters",
    "input": "ask a person which depth (input_required), then report with the answer",
    "nag": "ask a person again after every answer",
    "fail": "fail with a JSON-RPC error",
    "forget": "no longer know the task (an error answer)",
    "secret": "complete with a result quoting the toolset's secret header",
}


@dataclass
class Task:
    task_id: str
    topic: str
    polls: int
    behaviour: str
    size: int
    gets: int = 0
    cancelled: bool = False
    answers: list[dict[str, Any]] = field(default_factory=list)


class _TaskParams(RequestParams):
    task_id: str


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any] | None = None


@dataclass(eq=False)
class TaskBoard(Extension):
    identifier = IDENTIFIER

    tasks: dict[str, Task] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    poll_interval_ms: int = 1

    def tools(self) -> list[ToolBinding]:
        def research(topic: str, polls: int = 2, behaviour: str = "", size: int = 0) -> str:
            """Research a topic thoroughly (runs as a task: it takes a while)."""
            raise AssertionError("research runs only as a task")  # the interceptor answers

        return [ToolBinding(research)]

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", _TaskParams, self._get),
            MethodBinding("tasks/update", _UpdateParams, self._update),
            MethodBinding("tasks/cancel", _TaskParams, self._cancel),
        ]

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        if params.name != "research":
            return await call_next(ctx)
        capabilities = (ctx.meta or {}).get(CLIENT_CAPABILITIES_META_KEY) or {}
        if IDENTIFIER not in (capabilities.get("extensions") or {}):
            raise MCPError(MISSING_CAPABILITY, "Missing required client capability")
        arguments = params.arguments or {}
        task = Task(
            task_id=uuid.uuid4().hex,
            topic=str(arguments.get("topic", "")),
            polls=int(arguments.get("polls", 2)),
            behaviour=str(arguments.get("behaviour", "")),
            size=int(arguments.get("size", 0)),
        )
        with self.lock:
            self.tasks[task.task_id] = task
            self.created.append(task.task_id)
        return {"resultType": "task", **self._shape(task, "working", "Started")}

    def _shape(self, task: Task, status: str, message: str) -> dict[str, Any]:
        return {
            "taskId": task.task_id,
            "status": status,
            "statusMessage": message,
            "createdAt": STAMP,
            "lastUpdatedAt": STAMP,
            "ttlMs": None,
            "pollIntervalMs": self.poll_interval_ms,
        }

    def _known(self, task_id: str) -> Task:
        task = self.tasks.get(task_id)
        if task is None or (task.behaviour == "forget" and task.gets >= task.polls):
            raise MCPError(INVALID_PARAMS, "Failed to retrieve task: Task not found")
        return task

    async def _get(self, ctx: Any, params: _TaskParams) -> dict[str, Any]:
        with self.lock:
            task = self._known(params.task_id)
            task.gets += 1
            if task.cancelled:
                return {"resultType": "complete", **self._shape(task, "cancelled", "")}
            if task.gets < task.polls or task.behaviour in ("never", "forget"):
                percent = int(100 * task.gets / max(task.polls, 1)) % 100
                return {"resultType": "complete", **self._shape(task, "working", f"{percent}%")}
            return {"resultType": "complete", **self._finished(task)}

    def _finished(self, task: Task) -> dict[str, Any]:
        shape = self._shape(task, "completed", "Done")
        behaviour = task.behaviour
        text = f"Report on {task.topic}."
        if behaviour == "no_result":
            return shape
        if behaviour == "unknown_status":
            return {**shape, "status": "finished", "result": _text("whatever")}
        if behaviour == "other_task":
            return {**shape, "taskId": "not-" + task.task_id, "result": _text(text)}
        if behaviour == "huge":
            return {**shape, "result": _text("x" * task.size)}
        if behaviour == "nag" or (behaviour == "input" and not task.answers):
            request = {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": f"How deep? ({len(task.answers) + 1})",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"depth": {"type": "string"}},
                    },
                },
            }
            return {**shape, "status": "input_required", "inputRequests": {"depth": request}}
        if behaviour == "input":
            answer = task.answers[-1].get("depth") or {}
            said = (answer.get("content") or {}).get("depth") or answer.get("action")
            return {**shape, "result": _text(f"{text[:-1]}, {said}.")}
        if behaviour == "fail":
            error = {"code": -32603, "message": "the archive was unreachable"}
            return {**shape, "status": "failed", "error": error}
        if behaviour == "secret":
            return {**shape, "result": _text(f"{text} key=sk-test-secret-123")}
        return {**shape, "result": _text(text)}

    async def _update(self, ctx: Any, params: _UpdateParams) -> dict[str, Any]:
        with self.lock:
            task = self._known(params.task_id)
            task.answers.append(params.input_responses or {})
            self.updates.append(params.task_id)
        return {"resultType": "complete"}

    async def _cancel(self, ctx: Any, params: _TaskParams) -> dict[str, Any]:
        with self.lock:
            task = self._known(params.task_id)
            task.cancelled = True
            self.cancelled.append(params.task_id)
        return {"resultType": "complete"}


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def research(scripted: ScriptedModel, call_id: str = "r1", **arguments: Any) -> None:
    """The model calls the board's tool, then says it is done."""
    scripted.script.extend(
        [tool_calls(call(TOOL, call_id=call_id, topic="tides", **arguments)), say("Done.")]
    )
