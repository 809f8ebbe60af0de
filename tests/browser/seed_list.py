"""Seed data for the list view and the keyboard: twelve-step plans of a person of their own,
one partly done, with agent profiles on some steps and a name that is markup."""

from __future__ import annotations

from typing import Any

LONG_PLAN = [
    ("Fix the dates and the budget", "researcher"),
    ("Book the Shinkansen from Tokyo to Kyoto", "booker"),
    ("Reserve a ryokan near Gion for three nights", "booker"),
    ("Buy a two-day Kyoto city bus pass", None),
    ("Plan the Fushimi Inari hike at sunrise", "researcher"),
    ("Book a tea ceremony in Higashiyama", "booker"),
    ("Reserve the Arashiyama bamboo grove rickshaw", None),
    ("Find a vegetarian kaiseki dinner for the second night", "researcher"),
    ("Day trip to Nara: deer park and Todai-ji", None),
    ("Pack a rain plan: the Railway Museum and Nishiki market", None),
    ("Exchange yen and load an IC card", None),
    ('Write kyoto-itinerary.md <img src=x onerror="window.__xss=1">', "writer"),
]


def seed_long_plans(owner: Any) -> dict[str, int]:
    """Two sessions of `owner`'s, each with the twelve-step plan above (the first two steps
    done, the third in progress): one for the list view, one for the keyboard; and a third
    whose plan has forty steps."""
    from planboard import services
    from planboard.services import Actor

    me = Actor.person(owner)
    sessions: dict[str, int] = {}
    for key, title in (("list", "Kyoto, step by step"), ("keys", "Kyoto by keyboard")):
        session = services.session_create(owner=owner, title=title)
        plan, _ = services.plan_create(
            session_id=session.pk,
            actor=me,
            name="Five days in Kyoto",
            description="A calm autumn trip for two.",
            expected_outcome="Bookings and a day-by-day itinerary.",
            subtasks=[
                {"name": name, "description": "", "expected_outcome": "", "agent": agent}
                for name, agent in LONG_PLAN
            ],
        )
        ids = list(plan.subtasks.order_by("position").values_list("pk", flat=True))
        for subtask_id, outcome in ((ids[0], "Five days in late October"), (ids[1], "Booked")):
            services.subtask_set_state(
                plan_id=plan.pk, actor=me, subtask_id=subtask_id, state="done", outcome=outcome
            )
        services.subtask_set_state(
            plan_id=plan.pk, actor=me, subtask_id=ids[2], state="in_progress"
        )
        sessions[key] = int(session.pk)
    # A long plan: forty steps, most of them done.
    session = services.session_create(owner=owner, title="Kyoto, forty steps")
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=me,
        name="Kyoto, every detail",
        subtasks=[
            {
                "name": f"{LONG_PLAN[n % len(LONG_PLAN)][0].split(' <')[0]} ({n // 12 + 1})",
                "description": "",
                "expected_outcome": "",
                "agent": LONG_PLAN[n % len(LONG_PLAN)][1],
            }
            for n in range(40)
        ],
    )
    ids = list(plan.subtasks.order_by("position").values_list("pk", flat=True))
    for subtask_id in ids[:25]:
        services.subtask_set_state(
            plan_id=plan.pk, actor=me, subtask_id=subtask_id, state="done", outcome="Done"
        )
    sessions["forty"] = int(session.pk)
    return sessions
