"""External tools (MCP servers) in the agent loop: how each call is approved, run once, and
answered. What the model is offered is `agents.tool_offers`; the trip to the server is
`agents.server_calls`.

The model sees a session's tools as `<toolset>__<tool>` (plan tool names have no `__`, so the
two never collide) with the server's own input schema. A call is recorded (`ToolCall`) before
anything happens:

- policy `auto`, or "always allow" given in this session: recorded `approved`, run at once;
- policy `ask`: recorded `pending`; the run pauses (`waiting_for_approval`) until a person
  decides (`services.tool_call_decide` queues the run again). Nothing is approved by waiting.

Running a call: mark it `running` (committed first, so a dead worker leaves evidence), call
the server with no transaction open — in the chat session's live session with it
(`agents.mcp.sessions`), so a stateful server keeps its state for the conversation — then
store the result and the final status together.
A call whose result is stored is never run again (a result is unique per call id). A call
found `running` when a run resumes lost its worker: a read-only tool is simply called again;
anything else is answered `Error: interrupted, outcome unknown`, since it may have acted.

Built-in toolsets (the session workspace, `agents.workspace`) go through the same offers,
policies and records, but run in-process: their effect and result commit together, so one
found `running` had no effect and is simply run again.
"""

from __future__ import annotations

import json
import logging
from enum import Enum
from typing import Any

from agents import workspace
from agents.mcp import input_required, outcome
from agents.models import AgentStep
from agents.profiles import profile_toolsets
from agents.server_calls import resource_refused, server_output
from agents.tool_offers import Offered, offered_tools
from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import AgentRun, Message, ToolCall, Toolset
from planboard.services.tool_calls import repeatable
from planboard.services.tool_listing import namespaced, trusted_read_only

logger = logging.getLogger(__name__)

DENIED = "Error: the person denied this call."
INTERRUPTED = (
    "Error: interrupted, outcome unknown. The worker running this call stopped before the "
    "tool answered, so it may or may not have taken effect; check before calling it again."
)
INPUT_EXPIRED = (
    "Error: the tool's server asked questions that nobody answered in time; the call was "
    "not sent again and its outcome is what the server made of it unanswered (likely nothing)."
)
INPUT_GIVEN_UP = (
    "Error: the tool's server asked questions, and the run stopped waiting for the answers "
    "(it was stopped, or someone wrote instead); the call was not sent again."
)
TASK_INPUT_EXPIRED = (
    "Error: the tool ran as a task and its server asked questions that nobody answered in "
    "time; the task was cancelled at the server."
)
TASK_INPUT_GIVEN_UP = (
    "Error: the tool ran as a task and its server asked questions, and the run stopped "
    "waiting for the answers (someone wrote instead); the task was cancelled at the server."
)


# --- handling one call ------------------------------------------------------------------------


class Outcome(Enum):
    ANSWERED = "answered"  # a result is stored (or another worker stored it)
    WAITING = "waiting"  # a person has to decide first
    HELD = "held"  # decided, but an earlier call of the answer still waits


def handle_call(*, run: AgentRun, call: dict[str, Any], held: bool) -> Outcome:
    """Take one external call of the model's answer as far as it can go now. `held`: an
    earlier call of the same answer waits for a person, so this one must not run yet (calls
    take effect in the order the model gave them)."""
    advanced = advance_call(run=run, call=call, held=held)
    if isinstance(advanced, Outcome):
        return advanced
    return finish_call(record=advanced, output=server_output(advanced))


def advance_call(*, run: AgentRun, call: dict[str, Any], held: bool) -> Outcome | ToolCall:
    """`handle_call` up to the server: the outcome, or the claimed call (`running`, its
    toolset loaded) whose server the caller asks now — with no transaction open — before it
    stores the answer with `finish_call`. The run host awaits the server on its event loop
    (`aserver_output`) between the two."""
    call_id = str(call.get("id", ""))
    function = call.get("function") or {}
    name = str(function.get("name", ""))
    record = ToolCall.objects.filter(session_id=run.session_id, tool_call_id=call_id).first()
    if record is None:
        opened = _open(run=run, call_id=call_id, name=name, raw=function.get("arguments"))
        if isinstance(opened, str):
            return _answer_unrecorded(run=run, call_id=call_id, name=name, text=opened)
        record = opened
    if record.status == ToolCall.Status.PENDING:
        return Outcome.WAITING
    if record.status == ToolCall.Status.INPUT:
        return _resume(run=run, record=record)
    if held:
        return Outcome.HELD
    if record.status == ToolCall.Status.DENIED:
        text = DENIED + (f" Their note: {record.note}" if record.note else "")
        return _answer(record, text, status=None)
    if record.status == ToolCall.Status.APPROVED:
        return _run(run=run, record=record, retry=False)
    if record.status == ToolCall.Status.RUNNING:
        # Its worker died mid-call (we are the run's only driver now). A call the server runs
        # as a task is polled from its stored id (`agents.task_polls`), never called again.
        resumed = selectors.tool_call_with_task(record_id=record.pk) if record.task_id else None
        if resumed is not None:
            return resumed
        if repeatable(record):
            return _run(run=run, record=record, retry=True)
        return _answer(record, INTERRUPTED, status=ToolCall.Status.INTERRUPTED)
    # Finished, but the result did not reach the transcript (it commits with the status, so
    # only a hand-edited record gets here): say so rather than run it again.
    return _answer(record, INTERRUPTED, status=None)


def _open(*, run: AgentRun, call_id: str, name: str, raw: Any) -> ToolCall | str:
    """Record a new call (pending or approved), or say why it cannot be made."""
    # The tools the model was offered at this step: its acting profile may narrow them.
    step = AgentStep.objects.filter(run=run).order_by("-number").only("profile").first()
    within = profile_toolsets(step.profile) if step is not None else None
    offered = {o.name: o for o in offered_tools(session_id=run.session_id, within=within)}
    item = offered.get(name)
    if item is None:
        names = ", ".join(sorted(offered)) or "none"
        return (
            f"Error: there is no tool named {name!r} in this session. The external tools it "
            f"offers are: {names}."
        )
    arguments = _parse(raw)
    if isinstance(arguments, str):
        return arguments
    asks = _asks(session_id=run.session_id, item=item, arguments=arguments, offered=offered)
    if isinstance(asks, str):
        return asks
    return services.tool_call_open(
        session_id=run.session_id,
        run_id=run.pk,
        tool_call_id=call_id,
        tool_name=name,
        toolset_id=item.tool.toolset_id,
        tool=item.tool.name,
        arguments=arguments,
        read_only=trusted_read_only(item.tool),
        status=ToolCall.Status.PENDING if asks else ToolCall.Status.APPROVED,
    )


def _asks(
    *, session_id: int, item: Offered, arguments: dict[str, Any], offered: dict[str, Offered]
) -> bool | str:
    """Whether this call waits for a person, or why it may not be made at all. A built-in
    call that would discard content (emptying a file) follows the policy of the tool that
    discards it openly (`delete_file`) too: an overwrite is no way around a delete's approval.
    """
    if item.tool.toolset.kind != Toolset.Kind.BUILTIN:
        return item.asks
    stand_in = workspace.policy_stand_in(
        session_id=session_id, tool=item.tool.name, arguments=arguments
    )
    if stand_in is None:
        return item.asks
    other = offered.get(namespaced(item.tool.toolset.name, stand_in))
    if other is None:
        return (
            f"Error: this call would empty {arguments.get('path')!r}, which holds content; "
            f"that counts as deleting it, and {stand_in} is not allowed in this session. "
            "Nothing was changed."
        )
    return item.asks or other.asks


def _parse(raw: Any) -> dict[str, Any] | str:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}
    if isinstance(raw, dict):
        return raw
    try:
        # NaN and Infinity are not JSON (nor storable as such): refused like any bad JSON.
        value = json.loads(raw, parse_constant=_not_json)
    except (TypeError, ValueError) as exc:
        return f"Error: the arguments are not valid JSON ({exc}). Send one JSON object."
    if not isinstance(value, dict):
        return "Error: the arguments must be one JSON object of named values."
    return value


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _unavailable(record: ToolCall) -> Outcome:
    text = (
        f"Error: the tool {record.tool_name!r} is no longer available in this session "
        "(its toolset was disabled or removed, staff stopped offering it, or the session's "
        "owner has not connected their own credential for it, or was deactivated); it was "
        "not run."
    )
    return _answer(record, text, status=ToolCall.Status.FAILED)


def _resume(*, run: AgentRun, record: ToolCall) -> Outcome | ToolCall:
    """A call parked on its server's questions: still waiting; answered as expired or given
    up; or claimed to be sent again with the answers (once, whichever worker asks first)."""
    resumed = services.tool_call_resume_input(record_id=record.pk)
    if isinstance(resumed, str):
        if resumed == "waiting":
            return Outcome.WAITING
        if resumed == "expired":
            return _answer(record, INPUT_EXPIRED, status=ToolCall.Status.FAILED)
        if resumed == "void":
            return _answer(record, INPUT_GIVEN_UP, status=ToolCall.Status.FAILED)
        return Outcome.ANSWERED  # another worker took it up
    claimed = resumed.record
    if resumed.ended and claimed.toolset is not None:
        # A task waited on the questions: the run cancels it at the server, then answers.
        text = TASK_INPUT_EXPIRED if resumed.ended == "expired" else TASK_INPUT_GIVEN_UP
        claimed.resumes_input = {"rounds": resumed.rounds, "ended": text}
        return claimed
    offered_now = {o.name: o for o in offered_tools(session_id=run.session_id)}
    if claimed.toolset is None or record.tool_name not in offered_now:
        return _unavailable(claimed)
    claimed.resumes_input = {
        "responses": resumed.responses,
        "state": resumed.state,
        "rounds": resumed.rounds,
    }
    return claimed


def _run(*, run: AgentRun, record: ToolCall, retry: bool) -> Outcome | ToolCall:
    claimed = services.tool_call_claim(record_id=record.pk, retry=retry)
    if claimed is None:
        return Outcome.ANSWERED  # another worker took it; its result is its own to store
    offered_now = {o.name: o for o in offered_tools(session_id=run.session_id)}
    still = offered_now.get(record.tool_name)
    if still is None or claimed.toolset is None:
        return _unavailable(claimed)
    if claimed.toolset.kind == Toolset.Kind.BUILTIN:
        if claimed.decided_by_id is None:
            # Approved without a person when it was recorded; earlier calls of the answer
            # have run since, and what it would do now may need one.
            asks = _asks(
                session_id=run.session_id,
                item=still,
                arguments=claimed.arguments or {},
                offered=offered_now,
            )
            if asks is not False:
                text = asks if isinstance(asks, str) else _now_discards(claimed)
                return _answer(claimed, text, status=ToolCall.Status.FAILED)
        try:
            workspace.run_call(run=run, record=claimed)
        except PlanError as exc:
            if exc.code != "duplicate_tool_call":
                raise
        return Outcome.ANSWERED
    if still.tool.reads_resources:
        refused = resource_refused(claimed.toolset, (claimed.arguments or {}).get("uri"))
        if refused:
            return _answer(claimed, refused, status=ToolCall.Status.FAILED)
        claimed.reads_resource = True
    return claimed


def finish_call(*, record: ToolCall, output: outcome.ToolOutput) -> Outcome:
    """Store what the server answered a claimed call (`advance_call`), and the OAuth tokens
    the call refreshed (or that the provider refused: the person connects again)."""
    if output.oauth_tokens is not None and record.toolset is not None:
        services.toolset_oauth_tokens_store(
            toolset_id=record.toolset.pk,
            user_id=record.toolset.oauth_user_id,
            tokens=output.oauth_tokens,
            replacing=output.oauth_replaces or {},
        )
    if output.input_needed is not None:
        return _park(record, output.input_needed)
    status = ToolCall.Status.SUCCEEDED if output.ok else ToolCall.Status.FAILED
    return _answer(record, output.text, status=status, duration_ms=output.duration_ms)


def _park(record: ToolCall, needed: input_required.InputNeeded) -> Outcome:
    """The server answered `input_required`: the call waits for people's answers, with no
    worker held (`services.tool_call_await_input`); a question Planboard cannot show fails
    the call instead."""
    try:
        services.tool_call_await_input(
            record_id=record.pk,
            questions=[
                {
                    "key": q.key,
                    "mode": q.asked.mode,
                    "message": q.asked.message,
                    "schema": q.asked.schema,
                    "url": q.asked.url,
                }
                for q in needed.questions
            ],
            state=needed.state,
            ready=needed.ready,
            rounds=needed.rounds,
            timeout_seconds=input_required.input_seconds(),
        )
    except PlanError as exc:
        if exc.code == "already_decided":
            return Outcome.ANSWERED  # no longer this worker's call
        name = record.toolset.name if record.toolset is not None else "?"
        text = f"Error: toolset '{name}': the tool '{record.tool}' failed: {exc.message}"
        return _answer(record, text, status=ToolCall.Status.FAILED)
    return Outcome.WAITING


def _now_discards(record: ToolCall) -> str:
    path = (record.arguments or {}).get("path")
    return (
        f"Error: by the time this call ran, it would have emptied {path!r}, which now holds "
        "content; emptying a file needs the same approval as deleting it. Nothing was "
        "changed; call it again to ask for approval."
    )


def _answer(
    record: ToolCall, text: str, *, status: str | None, duration_ms: int | None = None
) -> Outcome:
    try:
        services.tool_call_answer(
            record_id=record.pk, content=text, status=status, duration_ms=duration_ms
        )
    except PlanError as exc:
        if exc.code != "duplicate_tool_call":
            raise
        # Answered by another worker meanwhile: its result stands.
    return Outcome.ANSWERED


def _answer_unrecorded(*, run: AgentRun, call_id: str, name: str, text: str) -> Outcome:
    try:
        services.message_record_agent(
            session_id=run.session_id,
            run_id=run.pk,
            role=Message.Role.TOOL,
            content=text,
            tool_call_id=call_id,
            tool_name=name[:100],
        )
    except PlanError as exc:
        if exc.code != "duplicate_tool_call":
            raise
    return Outcome.ANSWERED


# --- the hint ---------------------------------------------------------------------------------


def waiting_calls(*, session_id: int, pending: list[ToolCall] | None = None) -> list[str]:
    """The session's calls waiting for a person, as the hint lists them (`pending`: the
    waiting calls, if already read)."""
    if pending is None:
        pending = selectors.pending_tool_calls(session_id=session_id)
    return [f"{r.tool_name} (call {r.tool_call_id})" for r in pending]
