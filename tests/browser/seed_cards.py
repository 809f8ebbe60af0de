"""Seed data for the compact cards and their detail panel: a twelve-subtask plan in mid-run
(three done, one in progress, eight to do), cards naming agent profiles, and one card whose
description is 3,800 characters long."""

from __future__ import annotations

from typing import Any

LONG_CARD = "Plan the Fushimi Inari hike at sunrise"
# Where the long description ends: the panel shows it whole, the card shows none of it.
LONG_END = "End of the long route notes."

STEPS: list[tuple[str, str | None]] = [
    ("Book the Shinkansen from Tokyo to Kyoto", "booker"),
    ("Reserve a ryokan near Gion for three nights", "booker"),
    ("Buy a two-day Kyoto city bus pass", None),
    (LONG_CARD, "researcher"),
    ("Book a tea ceremony in Higashiyama", "booker"),
    ("Reserve the Arashiyama bamboo grove rickshaw", None),
    ("Find a vegetarian kaiseki dinner for the second night", "researcher"),
    ("Day trip to Nara: deer park and Todai-ji", None),
    ("Check the opening hours of Kinkaku-ji and Ryoan-ji", "researcher"),
    ("Pack a rain plan: the Kyoto Railway Museum and Nishiki market", None),
    ("Exchange yen and load an IC card", None),
    ("Write the itinerary to kyoto-itinerary.md", "writer"),
]

OUTCOMES = [
    "Two reserved seats on the 8:03 Nozomi, car 7.",
    "Three nights at a ryokan two streets from Hanamikoji.",
    "Passes bought online; pick them up at the Kyoto station desk.",
]


def long_description() -> str:
    """About 3,800 characters of route notes, ending with `LONG_END`."""
    paragraph = (
        "Start at the main gate before dawn, follow the torii tunnel past the Senbon Torii, "
        "keep left at the Yotsutsuji crossing for the view over the city, and take water: "
        "the stalls open late. "
    )
    text = ""
    while len(text) < 3800 - len(LONG_END) - 2:
        text += paragraph
    return text[: 3800 - len(LONG_END) - 2].rstrip() + "\n\n" + LONG_END


def seed_cards_plan(owner: Any) -> dict[str, Any]:
    """A session of `owner`'s with the twelve-subtask plan; returns its ids."""
    from planboard import services
    from planboard.services import Actor

    me = Actor.person(owner)
    session = services.session_create(owner=owner, title="Five days in Kyoto")
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=me,
        name="Five calm days in Kyoto",
        description="Temples early, gardens at noon, one day trip; no rushing.",
        expected_outcome="A day-by-day itinerary with every booking confirmed.",
        subtasks=[
            {
                "name": name,
                "description": long_description() if name == LONG_CARD else "Compare two options.",
                "expected_outcome": "A confirmation in the itinerary.",
                "agent": agent,
            }
            for name, agent in STEPS
        ],
    )
    ids = [subtask.pk for subtask in plan.subtasks.order_by("position")]
    for subtask_id, outcome in zip(ids, OUTCOMES, strict=False):
        services.subtask_set_state(
            plan_id=plan.pk, actor=me, subtask_id=subtask_id, state="done", outcome=outcome
        )
    services.subtask_set_state(plan_id=plan.pk, actor=me, subtask_id=ids[3], state="in_progress")
    return {"session": int(session.pk), "plan": int(plan.pk), "long_card": ids[3]}
