"""Seed data for the pages an email or a chat message links to: a twelve-step plan waiting
for a go-ahead, announced to its owner by email, so the action link's page has something
realistic to list."""

from __future__ import annotations

from typing import Any

STEPS = [
    "Book the Shinkansen from Tokyo to Kyoto",
    "Reserve a ryokan near Gion for three nights",
    "Buy a two-day Kyoto city bus pass",
    "Plan the Fushimi Inari hike at sunrise",
    "Book a tea ceremony in Higashiyama",
    "Reserve the Arashiyama bamboo grove rickshaw",
    "Find a vegetarian kaiseki dinner for the second night",
    "Day trip to Nara: deer park and Todai-ji",
    "Check the opening hours of Kinkaku-ji and Ryoan-ji",
    "Pack a rain plan: the Kyoto Railway Museum and Nishiki market",
    "Exchange yen and load an IC card",
    'Write the itinerary to kyoto-itinerary.md <img src=x onerror="window.__xss=1">',
]


def seed_confirmation_link(owner: Any) -> dict[str, Any]:
    """A session of `owner`'s whose drafted twelve-step plan waits for the go-ahead; the
    owner hears of it by email. Returns the session and the confirm link's path."""
    from planboard import services
    from planboard.models import Notification
    from planboard.services import Actor

    owner.email = f"{owner.get_username()}@example.com"
    owner.save(update_fields=["email"])
    services.notification_settings_update(
        user=owner, kinds=["confirmation"], email=True, delay_seconds=0
    )
    session = services.session_create(owner=owner, title="Kyoto in autumn")
    _, run = services.message_post(session_id=session.pk, author=owner, content="Plan Kyoto")
    services.run_start(run_id=run.pk, worker="seed")
    services.plan_create(
        session_id=session.pk,
        actor=Actor.agent(run),
        name="Five days in Kyoto",
        subtasks=[{"name": name, "description": "", "expected_outcome": ""} for name in STEPS],
    )
    services.message_record_agent(
        session_id=session.pk, run_id=run.pk, role="assistant", content="Shall I start?"
    )
    services.run_finish(run_id=run.pk, status="waiting_for_user")
    row = Notification.objects.get(user=owner, session=session)
    claimed = services.notification_claim(notification_id=row.pk)
    assert isinstance(claimed, services.Claimed)
    public = claimed.links["confirm"]
    return {"session": int(session.pk), "confirm": public[public.index("/inbox/act/") :]}


def no_notification(notification_id: int, delay: float = 0.0) -> None:
    """Seeding claims its notification itself: nothing is handed to a worker."""
