"""Seed data for presence (tests/browser/test_presence.py): alice's twelve-step plan, part
done, that two admins open beside her: Nora Okafor, and someone whose name is markup."""

from __future__ import annotations

from typing import Any

from tests.browser.seed_links import STEPS

HOSTILE_NAME = '<img src=x onerror="window.__xss=1">'


def seed_presence(alice: Any, password: str) -> dict[str, int]:
    from planboard import services
    from planboard.services import Actor
    from tests.support.permissions import admin

    admin("nora", password=password, first_name="Nora", last_name="Okafor")
    admin("xavi", password=password, first_name=HOSTILE_NAME)
    me = Actor.person(alice)
    session = services.session_create(owner=alice, title="Kyoto in spring, together")
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=me,
        name="Kyoto in spring",
        description="Five days in Kyoto for four people.",
        expected_outcome="Everything booked, one shared itinerary.",
        subtasks=[{"name": name, "description": "", "expected_outcome": ""} for name in STEPS[:-1]]
        + [{"name": "Write the shared itinerary", "description": "", "expected_outcome": ""}],
    )
    ids = [subtask.pk for subtask in plan.subtasks.order_by("position")]
    for subtask_id in ids[:3]:
        services.subtask_set_state(
            plan_id=plan.pk, actor=me, subtask_id=subtask_id, state="done", outcome="Booked"
        )
    services.subtask_set_state(plan_id=plan.pk, actor=me, subtask_id=ids[3], state="in_progress")
    return {"session": session.pk, "plan": plan.pk}
