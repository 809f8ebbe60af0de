"""Subtask dependencies: what a subtask waits for, checked and kept inside a plan's lock.

A subtask's `blocked_by` lists the ids of subtasks of the same plan it waits for. A plan where
no subtask waits for any keeps the plain rule (earlier subtasks first); once one does, the
order rule for the agent becomes "its blockers are done or abandoned" and position no longer
blocks. The lists never point outside the plan, at the subtask itself, or round in a circle;
a deleted subtask leaves every list it was in (`blockers_without`), in its deletion's
transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from planboard.exceptions import PlanError
from planboard.models import FINISHED_STATES, SubTask
from planboard.services._core import _describe


def uses_blockers(subtasks: Iterable[SubTask]) -> bool:
    """Whether any subtask of the plan waits for another (the dependency rule applies)."""
    return any(s.blocked_by for s in subtasks)


def open_blockers(subtasks: Sequence[SubTask], target: SubTask) -> list[SubTask]:
    """The subtasks `target` waits for that are neither done nor abandoned, in board order."""
    waiting = set(target.blocked_by or ())
    return [s for s in subtasks if s.pk in waiting and s.state not in FINISHED_STATES]


def check_order(subtasks: Sequence[SubTask], target: SubTask, *, doing: str) -> None:
    """The agent's order rule: blockers first when the plan has dependencies, else every
    earlier subtask first."""
    if uses_blockers(subtasks):
        waiting = open_blockers(subtasks, target)
        if waiting:
            names = ", ".join(_describe(s) for s in waiting)
            raise PlanError(
                f"Cannot {doing} {_describe(target)}: it is blocked by {names}, which "
                f"{'is' if len(waiting) == 1 else 'are'} not done or abandoned yet. "
                "Finish or abandon the blockers first, or work on a subtask that is not blocked.",
                code="blocked",
            )
        return
    for earlier in subtasks[: target.position]:
        if earlier.state not in FINISHED_STATES:
            raise PlanError(
                f"Cannot {doing} {_describe(target)}: {_describe(earlier)} is still "
                f"{earlier.state}. Finish or abandon it first.",
                code="order",
            )


def next_to_start(subtasks: Sequence[SubTask], finished: SubTask) -> SubTask | None:
    """The `todo` subtask to start once `finished` is done: with dependencies, the first in
    board order whose blockers are all done or abandoned; without, the next after it."""
    if uses_blockers(subtasks):
        return next(
            (s for s in subtasks if s.state == "todo" and not open_blockers(subtasks, s)), None
        )
    return next((s for s in subtasks[finished.position + 1 :] if s.state == "todo"), None)


def clean_blocker_ids(
    value: Any, *, subtasks: Sequence[SubTask], target_id: int, field: str = "blocked_by"
) -> list[int]:
    """`value` as the ids `target_id` may wait for, in board order: ids of other subtasks of
    this plan, no duplicates, and no circle once set."""
    ids = _id_list(value, field=field)
    by_id = {s.pk: s for s in subtasks}
    for pk in ids:
        if pk == target_id:
            raise PlanError(
                f"A subtask cannot wait for itself ('{field}').", code="blocked_by_self"
            )
        if pk not in by_id:
            raise PlanError(
                f"Subtask {pk} in '{field}' is not part of this plan.", code="blocked_by_unknown"
            )
    wanted = set(ids)
    cleaned = [s.pk for s in subtasks if s.pk in wanted]
    graph = {s.pk: list(s.blocked_by or ()) for s in subtasks}
    graph[target_id] = cleaned
    circle = find_cycle(graph, target_id)
    if circle:
        path = " → ".join(_describe(by_id[pk]) for pk in circle)
        raise PlanError(
            f"These dependencies would make a circle ({path} waits for the first again), "
            "so nothing in it could ever start. Drop one of them.",
            code="blocked_by_cycle",
        )
    return cleaned


def clean_blocker_indices(specs: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """The `blocked_by` of new subtasks given as 0-based indices into the same list (a plan
    being created): in range, not themselves, no circle. One list of indices per subtask."""
    count = len(specs)
    found: list[list[int]] = []
    for index, spec in enumerate(specs):
        field = f"subtasks[{index}].blocked_by"
        indices = _id_list(spec.get("blocked_by"), field=field, minimum=0)
        for other in indices:
            if other == index:
                raise PlanError(f"Subtask {index} cannot wait for itself ('{field}').")
            if other >= count:
                raise PlanError(
                    f"'{field}' names subtask {other}, but the plan has {count} subtasks "
                    f"(0 to {count - 1})."
                )
        found.append(sorted(set(indices)))
    graph = dict(enumerate(found))
    for start in graph:
        circle = find_cycle(graph, start)
        if circle:
            path = " → ".join(f"subtask {i}" for i in circle)
            raise PlanError(
                f"The subtasks' dependencies make a circle ({path} waits for the first again), "
                "so nothing in it could ever start. Drop one of them.",
                code="blocked_by_cycle",
            )
    return found


def find_cycle(graph: Mapping[int, Sequence[int]], start: int) -> list[int]:
    """A path start → … that waits for `start` again (`graph`: node → what it waits for), or
    [] when there is none. Iterative: a long chain cannot exhaust the stack."""
    parents: dict[int, int | None] = {start: None}
    stack = [start]
    while stack:
        node = stack.pop()
        for nxt in graph.get(node, ()):
            if nxt == start:
                path, back = [node], parents[node]
                while back is not None:
                    path.append(back)
                    back = parents[back]
                return list(reversed(path))
            if nxt not in parents:
                parents[nxt] = node
                stack.append(nxt)
    return []


def blockers_without(subtasks: Iterable[SubTask], gone_id: int) -> list[SubTask]:
    """Drop `gone_id` from every list it is in; returns the subtasks changed (to be saved)."""
    changed = []
    for subtask in subtasks:
        if gone_id in (subtask.blocked_by or ()):
            subtask.blocked_by = [pk for pk in subtask.blocked_by if pk != gone_id]
            changed.append(subtask)
    return changed


def _id_list(value: Any, *, field: str, minimum: int = 1) -> list[int]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PlanError(f"'{field}' must be a list of whole numbers, not {type(value).__name__}.")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not minimum <= item < 2**63:
            raise PlanError(
                f"'{field}' must hold whole numbers of at least {minimum}: {item!r:.40}."
            )
    return list(value)
