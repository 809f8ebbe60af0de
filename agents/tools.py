"""The ten plan tools the agent calls: the door the runtime uses.

Their parts live in `agents/plan_tools/`: the JSON schemas (`TOOL_SCHEMAS`, what litellm takes as
`tools=`), the argument checks, the call's shared context and the ten thin adapters.

`execute_tool_call` parses and checks the model's arguments, turns 0-based indices into subtask
ids through the plan *as the model was shown it* (`agents.plan_view`: a person may have moved
cards since), calls one service, and returns text for the model. Bad input never raises: it
comes back as `Error: …` saying what to do instead, and nothing is changed. The business rules
themselves live in `planboard.services`; a `PlanError` from there is passed on as the error text.
"""

from __future__ import annotations

from typing import Any

from agents.plan_tools.arguments import BadCall, parse_arguments, validate
from agents.plan_tools.call import PlanToolCall
from agents.plan_tools.handlers import HANDLERS
from agents.plan_tools.schemas import TOOL_NAMES, TOOL_SCHEMAS, is_plan_tool
from agents.plan_view import ShownPlan
from planboard import broadcast, selectors
from planboard.exceptions import PlanError, StaleVersion
from planboard.services import Actor

__all__ = ["HANDLERS", "TOOL_NAMES", "TOOL_SCHEMAS", "execute_tool_call", "is_plan_tool"]

# A person may edit the plan between our read and the write; re-resolve indices that often.
_STALE_ATTEMPTS = 3


def execute_tool_call(
    *,
    session_id: int,
    actor: Actor,
    name: str,
    arguments: str | dict[str, Any] | None,
    shown: ShownPlan | None = None,
) -> str:
    """Run one plan tool for the model and return its result text (`Error: …` on failure).

    `shown` is the plan as the model last saw it (see `agents.plan_view`); the tool updates it
    with what its result shows. Without it, the current plan stands for what was shown.
    """
    # The change's events (its plan event, the session's new current plan) leave together,
    # in one round trip, as inside the agent loop's own batch.
    with broadcast.batched():
        return _execute(
            session_id=session_id, actor=actor, name=name, arguments=arguments, shown=shown
        )


def _execute(
    *,
    session_id: int,
    actor: Actor,
    name: str,
    arguments: str | dict[str, Any] | None,
    shown: ShownPlan | None,
) -> str:
    try:
        handler = HANDLERS.get(name)
        if handler is None:
            raise BadCall(
                f"there is no tool named {name!r}. The plan tools are: "
                f"{', '.join(sorted(TOOL_NAMES))}."
            )
        args = validate(name, parse_arguments(arguments))
        attempts_left = _STALE_ATTEMPTS
        while True:
            found = selectors.session_with_plan(session_id=session_id)
            if found is None:
                raise BadCall(f"session {session_id} does not exist.")
            session, current_plan = found.session, found.plan
            if not session.plan_mode:
                raise BadCall(
                    "plan mode is off in this session, so the plan tools are not available. "
                    "Answer directly, or ask the user to switch plan mode on."
                )
            view = shown if shown is not None else ShownPlan.of(None)
            call = PlanToolCall(
                session=session,
                actor=actor,
                args=args,
                shown=view,
                current_row=current_plan,
                read=[found.snapshot] if found.snapshot is not None else [],
            )
            if shown is None and session.current_plan_id:
                # What the model was shown is the plan as it is now: one read serves both.
                view.show_plan(call.plan())
                view.changed = False
            try:
                return handler(call)
            except StaleVersion:
                # Someone changed the plan between our read and the write: read it again so
                # indices are resolved against the order the change is applied to.
                attempts_left -= 1
                if attempts_left == 0:
                    raise
    except BadCall as exc:
        return f"Error: {exc}"
    except PlanError as exc:
        return f"Error: {exc.message}"
