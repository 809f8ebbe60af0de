"""What every plan tool shares: the call (session, actor, arguments, the plan as shown) and
the checks that turn a shown index into the subtask it meant."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.hints import render_plan_markdown
from agents.plan_tools.arguments import BadCall, lax_int, type_label
from agents.plan_view import ShownPlan, text_digest
from planboard import selectors
from planboard.models import ChatSession, Plan
from planboard.services import Actor
from planboard.shapes import PlanSnapshot, SubtaskSnapshot


@dataclass(frozen=True)
class PlanToolCall:
    session: ChatSession
    actor: Actor
    args: dict[str, Any]
    # The plan as the model last saw it: indices in the call are resolved through it.
    shown: ShownPlan

    # The current plan's row, read with the session (its subtasks are read when needed).
    current_row: Plan | None = None
    # The current plan as read for this call (read once, then reused).
    read: list[PlanSnapshot] = field(default_factory=list)

    def plan(self) -> PlanSnapshot:
        """The current plan's snapshot, or a clear error when the session has none."""
        if self.session.current_plan_id is None:
            raise BadCall(
                "there is no current plan. Create one with create_plan, or bring back an "
                "earlier one with recover_historical_plan."
            )
        if not self.read:
            if self.current_row is not None:
                self.read.append(selectors.plan_snapshot_of(self.current_row))
            else:
                self.read.append(selectors.plan_snapshot(plan_id=self.session.current_plan_id))
        return self.read[0]

    def show(self, snapshot: PlanSnapshot) -> str:
        """The plan as text for the result; the model has now seen it whole."""
        self.shown.show_plan(snapshot)
        return render_plan_markdown(snapshot)


@dataclass(frozen=True)
class Target:
    """The subtask an index of the call meant, and the same subtask as it is now."""

    index: int  # the index the model used
    now: SubtaskSnapshot  # its entry in the current snapshot
    seen_state: str
    seen_digest: str

    @property
    def label(self) -> str:
        return f"subtask {self.now['index']} ('{self.now['name']}')"

    @property
    def moved(self) -> str:
        if self.now["index"] == self.index:
            return ""
        return (
            f" (you saw it at index {self.index}; the plan changed since, so it is at index "
            f"{self.now['index']} now)"
        )


def look_again(call: PlanToolCall, snapshot: PlanSnapshot) -> str:
    return (
        f"Nothing was changed. The plan is now:\n{call.show(snapshot)}\n"
        "Look at it again and, if the call is still needed, repeat it with the index shown there."
    )


def same_plan(call: PlanToolCall, snapshot: PlanSnapshot) -> None:
    if call.shown.plan_id != snapshot["id"]:
        raise BadCall(
            f"the current plan is plan {snapshot['id']} ('{snapshot['name']}'), not the plan "
            f"you were shown. {look_again(call, snapshot)}"
        )


def resolve(call: PlanToolCall, snapshot: PlanSnapshot, index: int) -> Target:
    """The subtask the model was shown at `index`, found in the current plan by its id."""
    same_plan(call, snapshot)
    seen_list = call.shown.subtasks
    if not 0 <= index < len(seen_list):
        raise BadCall(f"subtask_idx {index} is out of range: {valid_range(len(seen_list))}")
    seen = seen_list[index]
    now = next((s for s in snapshot["subtasks"] if s["id"] == seen.id), None)
    if now is None:
        raise BadCall(
            f"subtask {index} ('{seen.name}') that you were shown has been deleted since. "
            f"{look_again(call, snapshot)}"
        )
    return Target(index=index, now=now, seen_state=seen.state, seen_digest=seen.digest)


def require_unchanged(
    call: PlanToolCall, snapshot: PlanSnapshot, target: Target, *, state: bool, text: bool
) -> None:
    """Refuse when someone else changed what this call depends on after the model saw it."""
    changed: list[str] = []
    if state and target.now["state"] != target.seen_state:
        changed.append(f"its state from {target.seen_state} to {target.now['state']}")
    if text and text_digest(target.now) != target.seen_digest:
        changed.append("its text")
    if changed:
        raise BadCall(
            f"{target.label} was changed by someone else after you were shown it "
            f"({' and '.join(changed)}). {look_again(call, snapshot)}"
        )


def valid_range(count: int) -> str:
    if count == 0:
        return (
            "the plan has no subtasks. Add one with revise_current_plan "
            "(action 'add', subtask_idx 0)."
        )
    if count == 1:
        return "the plan has 1 subtask, so the only valid index is 0."
    return f"the plan has {count} subtasks, so use 0 to {count - 1}."


def label(subtask: SubtaskSnapshot) -> str:
    return f"subtask {subtask['index']} ('{subtask['name']}')"


def sentence(text: str) -> str:
    # str.capitalize() would lowercase the subtask's name too.
    return text[:1].upper() + text[1:]


def describe_changes(changes: dict[str, tuple[str, str]]) -> str:
    return "; ".join(f"{field}: '{old}' → '{new}'" for field, (old, new) in changes.items())


def subtask_fields(value: dict[str, Any]) -> dict[str, Any]:
    """The text fields of a subtask object; the model's state/outcome are ignored on purpose."""
    keys = ("name", "description", "expected_outcome", "agent")
    return {key: value[key] for key in keys if key in value}


def blocker_indices(value: dict[str, Any]) -> list[Any] | None:
    """A subtask object's `blocked_by` (None: not given). A lone index or digit strings are
    read as the model meant them; anything else is left for the checks to refuse."""
    given = value.get("blocked_by")
    if given is None:
        return None
    given = [given] if isinstance(given, int | str) and not isinstance(given, bool) else given
    if not isinstance(given, list):
        raise BadCall(f"'blocked_by' must be a list of subtask positions, not {type_label(given)}.")
    return [lax_int(item) for item in given]


def blocker_ids(call: PlanToolCall, snapshot: PlanSnapshot, indices: list[Any]) -> list[int]:
    """The subtasks the model was shown at `indices`, as ids (each must still exist)."""
    found = []
    for index in indices:
        if isinstance(index, bool) or not isinstance(index, int):
            raise BadCall(
                f"'blocked_by' must hold subtask positions (integers), not {index!r:.40}."
            )
        if not 0 <= index < len(call.shown.subtasks):
            raise BadCall(
                f"'blocked_by' names position {index}, which is out of range: "
                f"{valid_range(len(call.shown.subtasks))}"
            )
        found.append(resolve(call, snapshot, index).now["id"])
    return found


def waits_for(snapshot: PlanSnapshot, ids: list[int]) -> str:
    """What a subtask now waits for, named by position as the plan now lists them."""
    by_id = {s["id"]: s for s in snapshot["subtasks"]}
    named = [label(by_id[pk]) for pk in ids if pk in by_id]
    return ", ".join(named) if named else "nothing"


def new_subtask(item: dict[str, Any]) -> dict[str, Any]:
    """A subtask object of create_plan: its text fields, and what it waits for when given."""
    fields = subtask_fields(item)
    waits = blocker_indices(item)
    return {**fields, "blocked_by": waits} if waits is not None else fields
