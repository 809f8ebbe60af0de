"""Seed data for dependencies on the board: a four-subtask plan in which the third card waits
for the first."""

from __future__ import annotations

from typing import Any

STEPS = ["Buy the rail pass", "Book the ryokan", "Plan the day trips", "Pack the bags"]


def seed_blockers_plan(owner: Any) -> dict[str, Any]:
    """A session of `owner`'s with the plan; returns its ids."""
    from planboard import services
    from planboard.services import Actor

    me = Actor.person(owner)
    session = services.session_create(owner=owner, title="Kyoto with dependencies")
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=me,
        name="Kyoto, in the right order",
        subtasks=[
            {"name": name, "blocked_by": [0] if index == 2 else []}
            for index, name in enumerate(STEPS)
        ],
    )
    return {"session": int(session.pk), "plan": int(plan.pk)}
