"""The plan as the model last saw it, so an index in a tool call means what the model meant.

A tool call names subtasks by position (`subtask_idx`), and positions shift whenever a person
moves, inserts or deletes a card. The model chose its index from the hint of its step, so the
runtime resolves the index through that hint's order to the subtask's stable id — never through
the plan as it happens to be when the call runs.

The view starts as the hint's snapshot and follows what the model is shown afterwards in the
same answer: a tool result that prints the whole plan (create, recover, add, delete) replaces
it, a result about one subtask updates that subtask. A person's edit between the hint and the
call is therefore *not* in the view; the tools compare, act on the subtask the model meant, and
refuse when the person's edit changed what the call depends on.

The view is stored on the step (`AgentStep.shown_plan`) in the same transaction as each tool
result, so a worker that resumes an answer after a crash resolves the remaining calls exactly
as the first worker would have.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from planboard.shapes import PlanSnapshot, SubtaskSnapshot

# The subtask fields a person can edit as text; a change to any of them is "an edit".
_TEXT_FIELDS = ("name", "description", "expected_outcome", "agent")


def text_digest(subtask: Mapping[str, Any]) -> str:
    """A short fingerprint of a subtask's editable text, to notice a person's edit."""
    joined = "\x1f".join(str(subtask.get(key) or "") for key in _TEXT_FIELDS)
    return hashlib.blake2s(joined.encode(), digest_size=8).hexdigest()


@dataclass
class SeenSubtask:
    id: int
    name: str
    state: str
    digest: str

    @classmethod
    def of(cls, subtask: SubtaskSnapshot) -> SeenSubtask:
        return cls(
            id=int(subtask["id"]),
            name=str(subtask["name"]),
            state=str(subtask["state"]),
            digest=text_digest(subtask),
        )


@dataclass
class ShownPlan:
    """The plan id and subtask order the model was last shown (None: it was shown no plan)."""

    plan_id: int | None = None
    subtasks: list[SeenSubtask] = field(default_factory=list)
    changed: bool = field(default=False, compare=False)

    @classmethod
    def of(cls, snapshot: PlanSnapshot | None) -> ShownPlan:
        view = cls()
        view.show_plan(snapshot)
        view.changed = False
        return view

    def show_plan(self, snapshot: PlanSnapshot | None) -> None:
        """The model was shown this whole plan (or that there is none)."""
        self.plan_id = int(snapshot["id"]) if snapshot else None
        self.subtasks = [SeenSubtask.of(s) for s in snapshot["subtasks"]] if snapshot else []
        self.changed = True

    def show_subtask(self, subtask: SubtaskSnapshot) -> None:
        """The model was shown this subtask as it is now (its position in the view stays)."""
        for position, seen in enumerate(self.subtasks):
            if seen.id == subtask["id"]:
                self.subtasks[position] = SeenSubtask.of(subtask)
                self.changed = True
                return

    def to_json(self) -> dict[str, Any]:
        return {
            "plan_id": self.plan_id,
            "subtasks": [[s.id, s.name, s.state, s.digest] for s in self.subtasks],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> ShownPlan | None:
        if not data:
            return None
        return cls(
            plan_id=data.get("plan_id"),
            subtasks=[
                SeenSubtask(int(i), str(n), str(s), str(d)) for i, n, s, d in data["subtasks"]
            ],
        )
