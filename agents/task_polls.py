"""A tool call its server runs as an MCP task (`agents.mcp.tasks`), followed by the run host
until it is done.

The task's id is stored on the call as soon as the server makes it
(`services.tool_call_task_record`), then the run polls `tasks/get` with backoff — the first
poll after `FIRST_POLL_SECONDS`, each wait twice the last up to `MAX_POLL_SECONDS`, never
sooner than the server's suggested interval allows. Between polls the run is an idle task on
the run host's event loop (`agents.runtime.host`): no thread, process or database connection
waits for the server. Each poll is one short request in the conversation's session with the
server, with the usual deadline and size cap. What the server says of the task (its status
and status message) is stored on the call when it changes, and shown on its card.

It ends with:

- the task's result (or its failure), answered to the model like any call's result — once:
  the answer is stored under the call's row lock, and a second poller that saw the task finish
  finds it answered;
- a Stop of the run: the task is cancelled at the server (`tasks/cancel`) and the call
  answered so;
- `PLANBOARD_MCP_TASK_DEADLINE` seconds after the call started: cancelled at the server, and
  answered that it did not finish in time;
- the server asking people something during the task: the call is parked on the questions
  like a call's `input_required` (`external_tools.finish_call`: the run gives up its worker);
  once they are answered the run (on any worker) sends the answers with `tasks/update` and
  polls on. A round that expired or that the run stopped waiting for cancels the task at the
  server and answers the call so; so does a task past `PLANBOARD_MCP_INPUT_ROUNDS` rounds;
- the run failing at the worker's memory limit: cancelled at the server (nobody would poll);
- the worker handing its runs off (shutdown, recycling): the wait ends at once and the call
  stays `running` with its task id; the worker that takes the run over polls the stored task
  (`external_tools.advance_call`), nothing of it kept in memory.

A server that cannot be reached for a poll is asked again at the next one; after
`POLL_FAILURES_MAX` failed polls in a row the call is answered with the last failure.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from agents import llm
from agents.mcp import sessions, tasks
from agents.mcp.outcome import TaskState, ToolOutput
from agents.runtime.control import MemoryLimitExceeded, RunControl
from agents.runtime.lanes import Lane
from planboard import selectors, services
from planboard.models import ToolCall, Toolset

logger = logging.getLogger(__name__)

FIRST_POLL_SECONDS = 1.0
MAX_POLL_SECONDS = 30.0
POLL_FAILURES_MAX = 5

STOPPED = (
    "Error: the run was stopped while the tool '{tool}' ran as a task on toolset "
    "'{toolset}'; the task was cancelled at the server."
)
TOO_LONG = (
    "Error: the tool '{tool}' of toolset '{toolset}' ran as a task and did not finish within "
    "{seconds:g} seconds (PLANBOARD_MCP_TASK_DEADLINE); the task was cancelled at the server."
)


def task_deadline_seconds() -> float:
    return float(getattr(settings, "PLANBOARD_MCP_TASK_DEADLINE", 86400))


async def follow(
    record: ToolCall,
    first: TaskState | None,
    *,
    lane: Lane,
    control: RunControl,
) -> ToolOutput:
    """Poll the call's task until it is done (see the module's docstring); its result for the
    model. `first`: the task as the server made it; None to take up the task stored on the
    call. Raises `HandedOff` when the worker hands the run off (the call stays running)."""
    toolset = record.toolset
    task_id = first.task_id if first is not None else record.task_id
    if toolset is None:
        return ToolOutput(
            f"Error: the tool {record.tool_name!r} is no longer available in this session; "
            "its task could not be followed.",
            ok=False,
        )
    conversation = sessions.Conversation(record.session_id)
    state = first
    if first is not None:
        await _store(lane, record, first)
    # The task's input rounds so far; a call taken up after its task's questions were
    # answered (or given up on) sends the answers first.
    carried = record.resumes_input or {}
    rounds = int(carried.get("rounds") or 0)
    if not carried and first is None:  # taken up after a hand-off: its rounds so far count
        rounds = await lane.run(selectors.tool_call_input_rounds, record_id=record.pk)
    answered = await _answer_questions(record, toolset, task_id, conversation, control)
    if answered is not None:
        return answered
    started = record.started_at or timezone.now()
    deadline = started + timedelta(seconds=task_deadline_seconds())
    wait = FIRST_POLL_SECONDS
    failures = 0
    while True:
        left = (deadline - timezone.now()).total_seconds()
        if left <= 0:
            await _cancel(toolset, task_id, conversation)
            text = TOO_LONG.format(
                tool=record.tool, toolset=toolset.name, seconds=task_deadline_seconds()
            )
            return _ended(record, ToolOutput(text, ok=False))
        # The server's suggested interval is honoured, up to our longest wait.
        suggested = min((state.poll_ms or 0) / 1000 if state else 0.0, MAX_POLL_SECONDS)
        try:
            await control.watch(asyncio.sleep(min(left, max(wait, suggested))))
        except llm.LLMCancelled:
            await _cancel(toolset, task_id, conversation)
            text = STOPPED.format(tool=record.tool, toolset=toolset.name)
            return _ended(record, ToolOutput(text, ok=False))
        except MemoryLimitExceeded:
            await _cancel(toolset, task_id, conversation)  # the run fails: nobody would poll
            raise
        wait = min(MAX_POLL_SECONDS, wait * 2)
        polled = await control.measured(
            sessions.pool().serve(
                toolset,
                "tasks/get",
                functools.partial(
                    tasks.get_on, toolset=toolset, tool=record.tool, task_id=task_id, rounds=rounds
                ),
                conversation,
            )
        )
        if polled.task is None:  # the server could not be asked this time
            failures += 1
            if failures >= POLL_FAILURES_MAX:
                return _ended(record, polled)
            continue
        failures = 0
        if state is None or (polled.task.status, polled.task.message) != (
            state.status,
            state.message,
        ):
            await _store(lane, record, polled.task)
        state = polled.task
        if state.status == "input_required":
            rounds += 1
            if not polled.ok:  # past the round limit, or asking what is not given
                await _cancel(toolset, task_id, conversation)
        # Questions for people park the call; answered at once (roots), the task works on.
        if state.done or polled.input_needed is not None or not polled.ok:
            return _ended(record, polled)


async def _answer_questions(
    record: ToolCall,
    toolset: Toolset,
    task_id: str,
    conversation: sessions.Conversation,
    control: RunControl,
) -> ToolOutput | None:
    """The task's questions answered: their answers sent with `tasks/update` (None: the
    server took them, the task works on); given up on: the task cancelled, and the call's
    answer. Nothing to send: None."""
    carried = record.resumes_input or {}
    if not carried:
        return None
    if carried.get("ended"):
        await _cancel(toolset, task_id, conversation)
        return _ended(record, ToolOutput(str(carried["ended"]), ok=False))
    told = await control.measured(
        sessions.pool().serve(
            toolset,
            "tasks/update",
            lambda session: tasks.update_on(session, task_id, carried["responses"]),
            conversation,
        )
    )
    if told.ok:
        return None
    await _cancel(toolset, task_id, conversation)
    why = f"it refused the answers ({told.text})"
    text = tasks.INPUT_GIVEN_UP.format(toolset=toolset.name, tool=record.tool, why=why)
    return _ended(record, ToolOutput(text, ok=False))


async def _store(lane: Lane, record: ToolCall, state: TaskState) -> None:
    await lane.run(
        services.tool_call_task_record,
        record_id=record.pk,
        task_id=state.task_id,
        status=state.status,
        message=state.message,
    )


async def _cancel(toolset: Toolset, task_id: str, conversation: sessions.Conversation) -> None:
    """Ask the server to stop the task; a server that cannot be told is logged, not waited
    for (the call is answered either way)."""
    told = await sessions.pool().serve(
        toolset,
        "tasks/cancel",
        lambda session: tasks.cancel_on(session, task_id),
        conversation,
    )
    if not told.ok:
        logger.info("cancelling task %s of toolset %s failed: %s", task_id, toolset.pk, told.text)


def _ended(record: ToolCall, output: ToolOutput) -> ToolOutput:
    """The call's answer, lasting from its start to now."""
    started = record.started_at or timezone.now()
    elapsed = int((timezone.now() - started).total_seconds() * 1000)
    return ToolOutput(
        output.text,
        output.ok,
        max(0, elapsed),
        input_needed=output.input_needed,
        task=output.task,
    )
