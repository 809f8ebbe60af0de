"""Seed data for the plan templates' browser test: Tara's session with a plan whose cards name
agent profiles, one of her finished plans, a template of hers to schedule, and Tomo, who
shares a team with her only."""

from __future__ import annotations

from typing import Any

TEMPLATE_STEPS = [
    ("Collect the speakers' slides", "researcher"),
    ("Book the meeting room", "booker"),
    ("Send the agenda", None),
]


def seed_templates(tara: Any, tomo: Any) -> dict[str, int]:
    from planboard import services
    from planboard.models import Team, TeamMembership
    from planboard.services import Actor

    team = Team.objects.create(name="Events")
    TeamMembership.objects.create(team=team, user=tara)
    TeamMembership.objects.create(team=team, user=tomo)
    me = Actor.person(tara)
    session = services.session_create(owner=tara, title="Quarterly meetup")
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=me,
        name="Run the quarterly meetup",
        description="An evening of three short talks.",
        expected_outcome="Talks given, notes shared.",
        subtasks=[
            {"name": name, "description": "", "expected_outcome": "", "agent": agent or ""}
            for name, agent in TEMPLATE_STEPS
        ],
    )
    first = plan.subtasks.order_by("position").first()
    assert first is not None
    services.subtask_set_state(plan_id=plan.pk, actor=me, subtask_id=first.pk, state="in_progress")
    old_session = services.session_create(owner=tara, title="Spring meetup")
    old, _ = services.plan_create(
        session_id=old_session.pk,
        actor=me,
        name="Spring meetup",
        subtasks=[{"name": "Find a venue"}, {"name": "Order pizza"}],
    )
    services.plan_finish(plan_id=old.pk, actor=me, state="done", outcome="Went well")
    weekly = services.template_create(
        user=tara,
        name="Weekly fare check",
        description="Compare the fares to Kyoto for the autumn trip and note what changed.",
        expected_outcome="The cheapest fare with its airline and conditions.",
        subtasks=[
            {"name": "Collect the fares of three airlines"},
            {"name": "Compare with last week's", "blocked_by": [0]},
            {"name": "Write the summary", "blocked_by": [1]},
        ],
    )
    return {"session": session.pk, "finished_plan": old.pk, "weekly": weekly.pk}
