"""The typed shapes that travel: the plan snapshot, the plan event and the run.

REST answers, socket messages, the agent's hint and the browser all read these dictionaries,
so their keys are a contract. As `TypedDict`s, mypy fails on a misspelled or missing key
wherever one is built (`planboard.snapshots`, `planboard.services`) or read (`agents.hints`,
`agents.tools`, the selectors). frontend/js/types.js mirrors them as JSDoc typedefs for tsc;
change both together (docs/ARCHITECTURE.md, "Shapes that travel").
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict


class OwnerRef(TypedDict):
    id: int
    username: str


class SubtaskSnapshot(TypedDict):
    id: int
    index: int
    name: str
    description: str
    expected_outcome: str
    outcome: str
    state: str
    # The agent profile named for this subtask; None = the session's own.
    agent: str | None
    # The ids of the subtasks of this plan it waits for (board order); [] when it waits for none.
    blocked_by: list[int]
    created_at: str | None
    finished_at: str | None


class PlanHeader(TypedDict):
    """Everything about a plan except its subtasks (an event's `patch.plan`)."""

    id: int
    session_id: int | None
    owner: OwnerRef
    name: str
    description: str
    expected_outcome: str
    state: str
    outcome: str
    version: int
    created_at: str | None
    finished_at: str | None


class PlanSnapshot(PlanHeader):
    subtasks: list[SubtaskSnapshot]


class EventActor(TypedDict):
    kind: Literal["user", "agent", "system"]
    run_id: int | None
    user_id: int | None
    username: str | None


class PlanPatch(TypedDict):
    """Turns the snapshot at version N-1 into the one at N (`snapshots.apply_event`)."""

    plan: PlanHeader
    upsert: list[SubtaskSnapshot]
    remove: list[int]
    # The new order of every subtask id, or None when the order did not change.
    order: list[int] | None


class EventSeen(TypedDict):
    """When an agent first received a person's change in a hint."""

    at: str | None
    run_id: int | None
    step: int | None
    after_steps: int | None


class PlanEventData(TypedDict):
    type: Literal["plan.event"]
    plan_id: int
    session_id: int | None
    version: int
    action: str
    actor: EventActor
    subtask_id: int | None
    # The changed fields before and after (JSON objects; their keys depend on the action).
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    patch: PlanPatch
    created_at: str | None
    seen: EventSeen | None


class RunSnapshot(TypedDict):
    """An agent run as clients see it (`session.run` events, `latest_run`, REST answers)."""

    id: int
    session_id: int
    status: str
    error: str
    pause_reason: str | None
    model: str
    cancel_requested: bool
    step_count: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: str
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    # 1-based place among the owner's runs waiting for admission (the per-user cap on runs
    # in flight); None when the run does not wait.
    queue_position: int | None


class TemplateSubtask(TypedDict):
    """One subtask of a plan template: its text, profile and dependencies, no state or
    outcome (`planboard.plan_templates` reads them from a plan and back into a new plan)."""

    name: str
    description: str
    expected_outcome: str
    # The agent profile named for it; "" = the session's own.
    agent: str
    # The 0-based positions, in the template's list, of the subtasks it waits for; [] = none.
    blocked_by: list[int]


class TeamRef(TypedDict):
    id: int
    name: str


class TemplateSnapshot(TypedDict):
    """A plan template as REST answers and the pages show it."""

    id: int
    owner: OwnerRef
    # The team it is shared with; None = only its owner (and staff allowed to view templates).
    team: TeamRef | None
    name: str
    description: str
    expected_outcome: str
    subtasks: list[TemplateSubtask]
    source_plan_id: int | None
    created_at: str | None
    updated_at: str | None
