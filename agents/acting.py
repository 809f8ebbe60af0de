"""Acting on a stored answer: run its tool calls, each effect committed with its result.

The loop (`agents.loop`) asks the model and stores its answer; this module takes the answer's
tool calls up in order. A plan tool runs in one transaction with its stored result (and the
step's record of it), so a call is never executed twice; an external tool is claimed here and
its server asked by the loop with no database work open (`call_server`); a call that waits for
a person's approval holds the calls after it, so effects keep the order the model gave them.
"""

from __future__ import annotations

import logging
import time

from django.db import transaction

from agents import external_tools, server_calls, task_polls, tool_offers, tools
from agents.memory import RunMemory
from agents.models import AgentStep
from agents.plan_view import ShownPlan
from agents.runtime.control import RunControl
from agents.runtime.lanes import Lane
from agents.steps import record_tool_results, step_of_answer, unanswered_calls
from planboard import broadcast, services
from planboard.exceptions import PlanError
from planboard.models import AgentRun, Message, ToolCall
from planboard.services import Actor

logger = logging.getLogger(__name__)


async def call_server(record: ToolCall, *, lane: Lane, control: RunControl) -> None:
    """An external tool call claimed by a unit: ask its server on the loop (a tool call is
    never cut short, not even by a hand-off: its effect could not be undone; its growth of
    the process is measured for the run, `agents.runtime.memory_limit`), store the answer in
    another unit. A call the server runs as a task is followed until the task is done
    (`agents.task_polls`; a hand-off ends that wait, the task's id stored on the call): one
    whose task is stored already is taken up from there, without calling the tool again."""
    if record.task_id:
        output = await task_polls.follow(record, None, lane=lane, control=control)
    else:
        output = await control.measured(
            server_calls.aserver_output(record, lane=lane, control=control)
        )
        if output.task is not None:
            output = await task_polls.follow(record, output.task, lane=lane, control=control)
    await lane.run(external_tools.finish_call, record=record, output=output)


def execute_and_settle(
    *,
    run: AgentRun,
    actor: Actor,
    message: Message,
    memory: RunMemory,
    step: AgentStep | None = None,
) -> AgentRun | ToolCall | None:
    """Run the answer's calls; when some wait for a person, pause the run and return it (None:
    go on). A decision made meanwhile keeps the run going instead. `step` is given for an
    answer just stored (none of its calls can have a result yet)."""
    # The plan versions the calls make are the run's own: the next hint need not read them.
    with services.plan_changes_recorded() as made:
        outcome = execute_tool_calls(
            run=run, actor=actor, message=message, memory=memory, step=step
        )
    memory.plan_changes_made(made)
    if isinstance(outcome, ToolCall):
        return outcome
    if not outcome:
        memory.calls_answered(message)
        return None
    paused = services.run_pause_for_approval(run_id=run.pk)
    return None if paused.status == AgentRun.Status.RUNNING else paused


def execute_tool_calls(
    *,
    run: AgentRun,
    actor: Actor,
    message: Message,
    memory: RunMemory,
    step: AgentStep | None = None,
) -> bool | ToolCall:
    """Run each unanswered call; its effect and its stored result commit together. Returns
    whether some call waits for a person's approval, or the claimed external call whose
    server the caller asks next (the calls after it are taken up again afterwards).

    Indices in the calls are resolved through the plan as the model saw it (the step's
    `shown_plan`), which each result updates; the update commits with the result. External
    tools (`<toolset>__<tool>`) go through `agents.external_tools`; once a call waits for
    approval, the calls after it wait too, so effects keep the order the model gave them.
    """
    started = time.monotonic()
    fresh = step is not None
    if step is None:
        step = step_of_answer(message)
    shown = ShownPlan.from_json(step.shown_plan) if step is not None else None
    waiting = False
    # The results stored here, to record on the step without reading them back.
    stored_here: dict[str, tuple[str, str]] = {}
    all_here = True
    for call in (message.tool_calls or []) if fresh else unanswered_calls(message):
        call_id = call.get("id", "")
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        if tool_offers.is_external(name):
            all_here = False
            outcome = external_tools.advance_call(run=run, call=call, held=waiting)
            if isinstance(outcome, ToolCall):
                # Claimed: its server is asked with no unit of database work open (`drive`
                # awaits it), then the answer's remaining calls are taken up again.
                return outcome
            waiting = waiting or outcome is external_tools.Outcome.WAITING
            continue
        if waiting:
            all_here = False
            continue
        try:
            # The commit's events (the change, the result) leave in one round trip.
            with broadcast.batched(), transaction.atomic():
                result = tools.execute_tool_call(
                    session_id=run.session_id,
                    actor=actor,
                    name=name,
                    arguments=function.get("arguments"),
                    shown=shown,
                )
                stored = services.message_record_agent(
                    session_id=run.session_id,
                    run_id=run.pk,
                    role=Message.Role.TOOL,
                    content=result,
                    tool_call_id=call_id,
                    tool_name=name,
                )
                stored_here[call_id] = (name, stored.content)
                if step is not None:
                    # The step's record of results (and of the plan as the model now saw it)
                    # commits with the result itself: one write per call, none after the loop.
                    spent = int((time.monotonic() - started) * 1000)
                    started = time.monotonic()
                    record_tool_results(step, message, stored_here, ms=spent, shown=shown)
        except PlanError as exc:
            if exc.code == "duplicate_tool_call":
                all_here = False
                continue  # answered by another worker; our effect was rolled back with it
            raise
        except Exception as exc:
            # A bug or a database hiccup inside a tool: tell the model, keep the run going.
            logger.exception("tool %s failed in run %s", name, run.pk)
            all_here = False  # its result is recorded on the step after the loop
            failure = services.message_record_agent(
                session_id=run.session_id,
                run_id=run.pk,
                role=Message.Role.TOOL,
                content=f"Error: the tool failed unexpectedly ({type(exc).__name__}). "
                "Nothing was changed; check the plan in the hint and try again.",
                tool_call_id=call_id,
                tool_name=name,
            )
            stored_here[call_id] = (name, failure.content)
            memory.remember_stored(failure)
        else:
            memory.remember_stored(stored)  # committed: the next step need not read it
    if step is not None and not (fresh and all_here):
        # Results stored by others too (external tools, another worker): read them all.
        spent = int((time.monotonic() - started) * 1000)
        record_tool_results(step, message, None, ms=spent)
    return waiting
