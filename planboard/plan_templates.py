"""The shape of a plan template's subtasks, and the copies between plans and templates.

A template keeps a plan's text and its subtasks' text and profiles, never a state, an outcome
or history; a plan started from it is a new plan whose subtasks are all `todo`. The services
(`planboard/services/templates.py`) store what `clean_subtasks` returns and start plans from
what `plan_subtask_specs` returns.

Dependencies: a template keeps a subtask's `blocked_by` as the 0-based positions (in its own
list) of the subtasks it waits for; ids would name another plan's subtasks. `subtasks_from_plan`
turns a plan's blocker ids into positions, `clean_subtasks` checks positions with the rule a
new plan's subtasks follow (`_blockers.clean_blocker_indices`: in range, never the subtask
itself, no cycle), and `plan_subtask_specs` hands them to `plan_create`, which takes indices
and stores the new plan's ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from planboard.exceptions import PlanError
from planboard.models import SUBTASKS_HARD_LIMIT, AgentProfile
from planboard.services._blockers import clean_blocker_indices
from planboard.services._core import _clean_agent, _clean_name, _clean_text
from planboard.shapes import PlanSnapshot, TemplateSubtask

TEMPLATE_SUBTASK_KEYS = ("name", "description", "expected_outcome", "agent", "blocked_by")


def clean_subtasks(value: Any, *, kept_agents: Iterable[str] = ()) -> list[TemplateSubtask]:
    """A template's subtask list, checked key by key.

    A profile name must name an enabled profile, except the names in `kept_agents` (those the
    template or its plan already held): a profile disabled since is kept as it is and
    checked when a session starts from the template (`unavailable_profiles`).
    """
    if not isinstance(value, list):
        raise PlanError(
            "'subtasks' must be a list of objects with name, description, expected_outcome, "
            "agent and blocked_by."
        )
    if len(value) > SUBTASKS_HARD_LIMIT:
        raise PlanError(
            f"A template holds at most {SUBTASKS_HARD_LIMIT} subtasks; this one has {len(value)}."
        )
    kept = set(kept_agents)
    cleaned: list[TemplateSubtask] = []
    for index, item in enumerate(value):
        where = f"subtasks[{index}]"
        if not isinstance(item, dict):
            raise PlanError(f"{where} must be an object, not {type(item).__name__}.")
        unknown = sorted(set(item) - set(TEMPLATE_SUBTASK_KEYS))
        if unknown:
            raise PlanError(
                f"{where} has unknown key(s) {', '.join(map(repr, unknown))}; a template "
                f"subtask has {', '.join(TEMPLATE_SUBTASK_KEYS)} (no state or outcome)."
            )
        cleaned.append(
            {
                "name": _clean_name(item.get("name"), field=f"{where}.name"),
                "description": _clean_text(item.get("description"), field=f"{where}.description"),
                "expected_outcome": _clean_text(
                    item.get("expected_outcome"), field=f"{where}.expected_outcome"
                ),
                "agent": _clean_template_agent(
                    item.get("agent"), field=f"{where}.agent", kept=kept
                ),
                "blocked_by": [],
            }
        )
    # Every item is an object by now; positions are checked once the whole list is known.
    for subtask, waits in zip(cleaned, clean_blocker_indices(value), strict=True):
        subtask["blocked_by"] = waits
    return cleaned


def _clean_template_agent(value: Any, *, field: str, kept: set[str]) -> str:
    if isinstance(value, str) and value.strip() in kept:
        return value.strip()
    return _clean_agent(value, field=field)


def agents_of(subtasks: Iterable[TemplateSubtask]) -> set[str]:
    return {subtask["agent"] for subtask in subtasks if subtask["agent"]}


def subtasks_from_plan(snapshot: PlanSnapshot) -> list[TemplateSubtask]:
    """A plan's subtasks as a template keeps them: text, profile and what each waits for (as
    positions in this list), in board order."""
    position_of = {subtask["id"]: index for index, subtask in enumerate(snapshot["subtasks"])}
    return [
        {
            "name": subtask["name"],
            "description": subtask["description"],
            "expected_outcome": subtask["expected_outcome"],
            "agent": subtask["agent"] or "",
            # An id outside the plan cannot occur (the services keep the lists inside it);
            # were one there, it is left out rather than pointing at a wrong position.
            "blocked_by": sorted(
                position_of[pk] for pk in subtask.get("blocked_by") or () if pk in position_of
            ),
        }
        for subtask in snapshot["subtasks"]
    ]


def unavailable_profiles(subtasks: list[TemplateSubtask]) -> dict[int, str]:
    """{position: profile name} of the subtasks naming a profile no one may use now
    (removed or disabled since the template was saved)."""
    named = agents_of(subtasks)
    if not named:
        return {}
    usable = set(
        AgentProfile.objects.filter(name__in=named, enabled=True).values_list("name", flat=True)
    )
    return {
        position: subtask["agent"]
        for position, subtask in enumerate(subtasks)
        if subtask["agent"] and subtask["agent"] not in usable
    }


def plan_subtask_specs(
    subtasks: list[TemplateSubtask], *, drop_agents_at: Iterable[int] = ()
) -> list[dict[str, Any]]:
    """What `services.plan_create` takes for a template's subtasks: text, profile and
    `blocked_by` as indices into the same list (every new subtask starts `todo`); the
    subtasks at `drop_agents_at` lose their profile and do the session's."""
    dropped = set(drop_agents_at)
    return [
        {
            "name": subtask["name"],
            "description": subtask["description"],
            "expected_outcome": subtask["expected_outcome"],
            "agent": "" if position in dropped else subtask["agent"],
            "blocked_by": list(subtask["blocked_by"]),
        }
        for position, subtask in enumerate(subtasks)
    ]
