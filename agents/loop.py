"""The agent loop: one run of the agent for a chat session, step by step.

A step is: read the session and its transcript, trim the transcript to the model's context
budget, build the hint fresh from the database, call the model, store its answer, then run each
tool call it asked for. The plan is never lost to trimming because the hint always carries it,
and because the hint is rebuilt before every call, edits people make on the board between two
steps change what the agent does next.

Durability. Everything the loop decides from is stored: the transcript (messages) and the step
records (`AgentStep`). A run re-delivered after its worker died starts again from that state:
tool calls of the last answer that have no stored result are executed first, an answer that
was already final is not asked for again, and a tool call that has a result is never executed
twice (effect and result commit in one transaction; a result is unique per tool-call id). No
transaction is ever held across an LLM call.

Stop conditions, checked in this order:
- cancel requested (`services.run_cancel`) -> `cancelled`, at the next step boundary; an answer
  that arrives after the cancel is discarded unexecuted.
- the model answers without tool calls -> the answer is stored, then
  - `waiting_for_user` if the session needs the user's confirmation and the agent has just
    presented a plan without starting it: there is a current, unfinished plan with at least one
    `todo` subtask, none in progress and none done (hint case 2). The user's next message
    re-queues this same run (`services.message_post`).
  - otherwise `succeeded`.
  Neither happens while the user has written something the model has not seen yet: the loop
  takes another step instead (`run_finish(unless_user_message_after=...)` checks this under the
  session lock, so no message is ever left unread).
- a call of an external tool needs a person's approval -> `waiting_for_approval`; deciding the
  last waiting call re-queues this same run (`services.tool_call_decide`), which then runs the
  approved calls once each and answers denied ones (`agents.external_tools`).
- the step limit (`PLANBOARD_AGENT_MAX_STEPS` model calls per run) -> `failed`, with an error
  saying so; the plan keeps its progress and a new message continues the work.
- a spending limit leaves no room for the next call (`agents.budgets`: checked before each
  call with the request's size; the answer is capped by what is left) -> `waiting_for_user`
  with pause reason `budget`; raising the session's limit, or a message, resumes it.
- the acting profile names a key variable the allow-list refuses -> `failed`, nothing sent.
- the model cannot be reached after its retries, or refuses the request -> `failed` with the
  reason.

The hint is sent as the last message of each request with the `user` role (every provider
accepts a trailing user message, where a trailing system message is not portable); it is
wrapped in `<system-hint>` tags and the system prompt tells the model that such blocks come
from the runtime, not from the person.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from agents import attachments, llm
from agents.acting import call_server, execute_and_settle
from agents.budgets import Allowance, step_allowance
from agents.context import StepContext, StepRequest, build_request, read_step_context
from agents.lease import LeaseKeeper, new_worker_id
from agents.memory import RunMemory
from agents.models import AgentStep
from agents.runtime.control import HandedOff, MemoryLimitExceeded, RunControl
from agents.runtime.lanes import CallerLane, Lane
from agents.steps import (
    AnswerSuperseded,
    close_step,
    interrupt_unfinished_steps,
    mark_changes_seen,
    mark_messages_seen,
    open_step,
    seen_until,
    store_answer,
)
from agents.streaming import AnswerStream, ask_model
from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, ToolCall
from planboard.services import Actor

logger = logging.getLogger(__name__)

# --- entry point ------------------------------------------------------------------------------


def execute_run(*, run_id: int, worker: str | None = None) -> AgentRun:
    """Drive a queued (or re-delivered running) run until it stops; returns the run.

    The run is driven on an event loop of its own, its database work done on the calling
    thread (`agents.runtime.lanes.CallerLane`): a worker's run host drives many runs at once
    instead (`agents.runtime.host`). A run another worker holds a live lease on is returned
    untouched (see `agents.lease`).
    """
    worker = worker or new_worker_id()
    run = services.run_start(run_id=run_id, worker=worker)
    if run.status != AgentRun.Status.RUNNING or run.lease_owner != worker:
        # Cancelled while queued, already finished, waiting, or driven by another worker.
        return run
    lane = CallerLane()
    with LeaseKeeper(run_id=run.pk, worker=worker):
        return lane.serve(
            lambda lane: drive(
                run, worker=worker, lane=lane, control=RunControl(run_id=run.pk, poll=lane)
            )
        )


async def drive(run: AgentRun, *, worker: str, lane: Lane, control: RunControl) -> AgentRun:
    """Drive a run `worker` has just started (`services.run_start`) until it stops, or until
    its worker hands it off (`HandedOff` at a safe point: the lease is released and the run
    dispatched again). Every piece of database work is one unit on `lane`."""
    try:
        if not run.first_start:  # a run started before may have a call a dead worker left
            await lane.run(interrupt_unfinished_steps, run)
        return await _drive(run, worker=worker, lane=lane, control=control)
    except HandedOff:
        await lane.run(services.run_hand_off, run_id=run.pk, worker=worker)
        return await lane.run(lambda: selectors.agent_run(run_id=run.pk) or run)
    except MemoryLimitExceeded as exc:
        logger.error("agent run %s stopped at the worker's memory limit", run.pk)
        return await lane.run(_finish, run, status=AgentRun.Status.FAILED, error=str(exc))
    except Exception as exc:
        logger.exception("agent run %s crashed", run.pk)
        return await lane.run(
            _finish,
            run,
            status=AgentRun.Status.FAILED,
            error=f"The agent stopped on an internal error ({type(exc).__name__}): {exc}",
        )


@dataclass
class _Step:
    """A step ready for its model call."""

    run: AgentRun
    request: StepRequest
    allowed: Allowance
    step: AgentStep


async def _drive(run: AgentRun, *, worker: str, lane: Lane, control: RunControl) -> AgentRun:
    actor = Actor.agent(run)
    budget_factor = 1.0
    memory = RunMemory.for_run(run)  # reads nothing yet
    while True:
        control.check()
        ready = await lane.run(_prepare_step, run, worker, actor, memory, budget_factor)
        if ready is _AGAIN:
            continue
        if isinstance(ready, ToolCall):
            await call_server(ready, lane=lane, control=control)
            continue
        if isinstance(ready, attachments.Attachments):
            await attachments.read_and_store(ready, lane=lane)
            continue
        if isinstance(ready, AgentRun):
            return ready
        assert isinstance(ready, _Step)
        run, step = ready.run, ready.step
        answer = AnswerStream(run=run, answer_id=f"r{run.pk}s{step.number}")
        try:
            result = await ask_model(
                ready.request,
                answer,
                max_tokens=ready.allowed.max_tokens,
                lane=lane,
                control=control,
            )
        except HandedOff:
            await lane.run(_close_handed_off, answer, step)
            raise
        except MemoryLimitExceeded as exc:
            await lane.run(_close_over_memory, answer, step, str(exc))
            raise
        except llm.LLMCancelled:
            return await lane.run(_close_cancelled, answer, step, run)
        except llm.LLMError as exc:
            await lane.run(_close_failed, answer, step, exc)
            if exc.context_exceeded and budget_factor > 0.2:
                budget_factor /= 2  # our token estimate was too generous for this model
                continue
            return await lane.run(_finish, run, status=AgentRun.Status.FAILED, error=exc.message)
        await lane.drain()  # the streamed text has left before the stored message
        stopped = await lane.run(_store_and_act, ready, result, answer, worker, actor, memory)
        if isinstance(stopped, ToolCall):
            await call_server(stopped, lane=lane, control=control)
        elif stopped is not None:
            return stopped
        # The next iteration settles a final answer or takes the next step.


def _prepare_step(
    run: AgentRun, worker: str, actor: Actor, memory: RunMemory, budget_factor: float
) -> AgentRun | _Step | object:
    """One unit of database work before a model call: read what the step decides from,
    settle what the last answer left, build the request and open the step. Returns the
    stopped run, `_AGAIN`, or the step ready for its call."""
    # What this step decides from, read once: the run as it is now, its session and plan,
    # the transcript.
    context = read_step_context(run_id=run.pk, memory=memory)
    if context is None:
        return run  # deleted with its session
    run = context.run
    if not run.is_active or run.lease_owner != worker:
        return run  # finished elsewhere, or another worker took over after our lease lapsed
    if run.cancel_requested:
        return _finish(run, status=AgentRun.Status.CANCELLED)
    settled = _settle_stored_answer(context, actor, memory)
    if settled is _AGAIN or isinstance(settled, AgentRun | ToolCall):
        return settled
    # Resources a person attached are read from their servers before the model is asked.
    unread = attachments.to_read(run=run, transcript=context.transcript)
    if unread is not None:
        return unread
    # Settling wrote nothing the request reads (else it said _AGAIN): the context serves it.
    request = build_request(run=run, budget_factor=budget_factor, memory=memory, read=context)
    allowed = _stop_before_step(run, request)
    if isinstance(allowed, AgentRun):
        return allowed
    step = open_step(run=run, request=request, number=memory.step_number())
    mark_changes_seen(run=run, step=step, request=request, memory=memory)
    mark_messages_seen(run=run, step=step, request=request, memory=memory)
    return _Step(run=run, request=request, allowed=allowed, step=step)


def _finish(run: AgentRun, status: str, **fields: Any) -> AgentRun:
    """`services.run_finish` of the run, whose session it knows (one read fewer)."""
    return services.run_finish(run_id=run.pk, session_id=run.session_id, status=status, **fields)


def _close_cancelled(answer: AnswerStream, step: AgentStep, run: AgentRun) -> AgentRun:
    answer.end()
    close_step(
        step,
        status=AgentStep.Status.DISCARDED,
        error="The run was cancelled while the model was answering.",
    )
    return _finish(run, status=AgentRun.Status.CANCELLED)


def _close_handed_off(answer: AnswerStream, step: AgentStep) -> None:
    answer.end()
    close_step(
        step,
        status=AgentStep.Status.INTERRUPTED,
        error="The worker stopped while the model was answering; another worker asks again.",
    )


def _close_over_memory(answer: AnswerStream, step: AgentStep, message: str) -> None:
    answer.end()
    close_step(step, status=AgentStep.Status.FAILED, error=message)


def _close_failed(answer: AnswerStream, step: AgentStep, exc: llm.LLMError) -> None:
    answer.end()
    close_step(step, status=AgentStep.Status.FAILED, error=exc.message, attempts=exc.attempts)


def _store_and_act(
    ready: _Step,
    result: llm.LLMResult,
    answer: AnswerStream,
    worker: str,
    actor: Actor,
    memory: RunMemory,
) -> AgentRun | ToolCall | None:
    """One unit after the model answered: store the answer with its step, then run its tool
    calls. Returns the stopped (or paused) run, or None to take the next step."""
    run, step, request = ready.run, ready.step, ready.request
    answer.flush()  # the last piece of text leaves before the stored message
    try:
        message = store_answer(
            run=run,
            step=step,
            result=result,
            request=request,
            answer_id=answer.answer_id,
            worker=worker,
        )
    except AnswerSuperseded as superseded:
        answer.end()
        if superseded.taken_over(worker):
            # Our lease lapsed during the call and another worker drives the run now;
            # its answer, not ours, goes into the transcript.
            close_step(
                step,
                status=AgentStep.Status.DISCARDED,
                result=result,
                error="Another worker took the run over while the model was answering.",
            )
            return selectors.agent_run(run_id=run.pk) or run
        close_step(
            step,
            status=AgentStep.Status.DISCARDED,
            result=result,
            error="The run was cancelled while the model was answering.",
        )
        return _finish(run, status=AgentRun.Status.CANCELLED)
    answer.end()
    memory.step_completed(step, answer=message)
    if message.tool_calls:
        return execute_and_settle(run=run, actor=actor, message=message, step=step, memory=memory)
    return None


_AGAIN = object()  # `_settle_stored_answer`: look at the run again


def _settle_stored_answer(
    context: StepContext, actor: Actor, memory: RunMemory
) -> AgentRun | object | None:
    """Finish what the last stored answer left: run its unanswered tool calls, or settle the
    status after a final answer. Returns the stopped (or paused) run, `_AGAIN` to look at the
    run again, or None when the next step is a new model call."""
    if memory.answered_answer_id is not None:
        return None  # this worker just stored a result for every call of the newest answer
    # The newest answer: the one this worker just stored (it holds the run's lease, so no
    # other answer can be newer), else the transcript's.
    run = context.run
    mine = memory.last_answer
    last = mine[0] if mine is not None else context.last_answer()
    if last is not None and last.tool_calls:
        answered = context.answered_call_ids()
        if all(c.get("id", "") in answered for c in last.tool_calls):
            return None
        # Calls a person has just decided, or a previous worker died between the answer and
        # its tool results.
        paused = execute_and_settle(run=run, actor=actor, message=last, memory=memory)
        return paused if paused is not None else _AGAIN
    if last is None:
        return None
    # The final answer is stored; only the status is left to settle, unless the user wrote
    # something the model has not read yet (checked under the session lock).
    finished = _finish(
        run,
        status=(
            AgentRun.Status.WAITING_FOR_USER
            if context.plan_awaits_confirmation()
            else AgentRun.Status.SUCCEEDED
        ),
        unless_user_message_after=mine[1] if mine is not None else seen_until(last),
    )
    if not finished.is_active:
        return finished
    # Still active: the user wrote in the meantime, so the next step reads it.
    context.transcript = memory.transcript()
    return None


def _stop_before_step(run: AgentRun, request: StepRequest) -> AgentRun | Allowance:
    """The run, stopped, when its step limit, its profile's key or a spending limit forbids
    another model call; else what the call may spend."""
    limit = request.acting.max_steps
    if run.step_count >= limit:
        return _finish(
            run,
            status=AgentRun.Status.FAILED,
            error=(
                f"The agent stopped after {run.step_count} steps without a final answer "
                f"(the limit is {limit}: PLANBOARD_AGENT_MAX_STEPS or the acting profile's "
                "step limit). The plan keeps its progress; send a message to let the agent "
                "continue."
            ),
        )
    if request.acting.key_refused:
        return _finish(run, status=AgentRun.Status.FAILED, error=request.acting.key_refused)
    session = request.session or ChatSession.objects.get(pk=run.session_id)
    allowed = step_allowance(session=session, acting=request.acting, prompt_tokens=request.tokens)
    if allowed.stop:
        # Checked before each call with the request's own size, and the answer capped by what
        # is left: a step cannot run far past a limit.
        return _finish(
            run,
            status=AgentRun.Status.WAITING_FOR_USER,
            pause_reason=AgentRun.PAUSE_BUDGET,
            error=f"Paused at the spending limit. {allowed.stop}",
        )
    return allowed
