"""The README's pictures: a person ("hana") whose agent is in the middle of a twelve-step Kyoto
plan (four steps done, one under way, one dropped), with the conversation that got there, tool
work folded into activity lines and markdown answers, what it cost so far, and finished plans
in her history.

Written through the services as the agent would have written it. The run holds its lease for a
day, so the test server's worker leaves it alone: the page shows an agent at work, and the
picture is the same every time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from unittest import mock

SESSION_TITLE = "Kyoto in April, for two"
PLAN_NAME = "Five calm days in Kyoto"

# (name, agent profile, outcome when done; None: not done yet). Short names: a card and an
# activity line show them whole at 1280 px.
STEPS: list[tuple[str, str | None, str | None]] = [
    ("Book the Shinkansen to Kyoto", "booker", "8:03 Nozomi on 7 April, car 7"),
    ("Book a ryokan in Gion", "booker", "Four nights near Hanamikoji"),
    ("Buy city bus passes", None, "Two passes; collect at Kyoto station"),
    ("Check temple opening hours", "researcher", "Kinkaku-ji and Ryoan-ji open at 9:00"),
    ("Book a tea ceremony", "booker", None),
    ("Fushimi Inari at sunrise", "researcher", None),
    ("Arashiyama bamboo grove", None, None),
    ("Find a kaiseki dinner", "researcher", None),
    ("Day trip to Nara", None, None),
    ("Rent bicycles by the Kamo", None, None),
    ("Rain plan: Nishiki market", None, None),
    ("Write kyoto-itinerary.md", "writer", None),
]
DONE = 4  # the first four are done; the fifth is under way
DROPPED = 9  # the bicycles: the forecast says rain

ASK = (
    "Plan five calm days in Kyoto for the two of us in early April: temples early, one day "
    "trip, nothing rushed. Book what can be booked."
)
PLAN_ANSWER = """Here is a plan in **12 steps**, bookings first so the dates hold:

1. **Getting there and staying**: the Shinkansen, a ryokan in Gion, bus passes
2. **The days**: temples early, Fushimi Inari at sunrise, Arashiyama, a day in Nara
3. **Slow evenings**: a tea ceremony and one *kaiseki* dinner

Shall I start with the bookings?"""
GO_AHEAD = "Looks good, go ahead."
PROGRESS_ANSWER = """### Booked so far

- **Shinkansen**: the 8:03 *Nozomi* on 7 April
- **Ryokan**: four nights near Hanamikoji
- **Bus passes**: collect them at Kyoto station

Temples open at **9:00**; rain on the 9th, so no bicycles. Now booking the **tea ceremony**."""
LATER = "Could the tea ceremony be in the afternoon? Mornings are for temples."


def _call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": tool, "arguments": json.dumps(arguments)},
    }


def _tool_step(
    session_id: int, run_id: int, calls: list[tuple[dict[str, Any], str]], text: str = ""
) -> None:
    """One agent message with its tool calls, then each call's answer."""
    from planboard import services

    services.message_record_agent(
        session_id=session_id,
        run_id=run_id,
        role="assistant",
        content=text,
        tool_calls=[call for call, _ in calls],
    )
    for call, result in calls:
        services.message_record_agent(
            session_id=session_id,
            run_id=run_id,
            role="tool",
            content=result,
            tool_call_id=call["id"],
            tool_name=call["function"]["name"],
        )


def _label(index: int) -> str:
    """How the plan tools' results name a subtask, at the start of a sentence."""
    return f"Subtask {index} ('{STEPS[index][0]}')"


def seed_showcase(hana: Any) -> dict[str, Any]:
    from django.test import override_settings

    from planboard import services
    from planboard.models import Team, TeamMembership
    from planboard.services import Actor

    studio = Team.objects.create(name="Studio")
    TeamMembership.objects.create(team=studio, user=hana, role=TeamMembership.Role.LEAD)
    session = services.session_create(owner=hana, title=SESSION_TITLE)
    ask, run = services.message_post(session_id=session.pk, author=hana, content=ASK)
    services.run_start(run_id=run.pk, worker="seed")
    agent = Actor.agent(run)
    subtasks = [
        {
            "name": name,
            "description": "Compare two options; pick the calmer one.",
            "expected_outcome": "A confirmation in the itinerary.",
            "agent": profile,
        }
        for name, profile, _ in STEPS
    ]
    create = _call(
        "call_plan",
        "create_plan",
        name=PLAN_NAME,
        description="Temples early, gardens at noon, one day trip to Nara; no rushing.",
        expected_outcome="A day-by-day itinerary with every booking confirmed.",
        subtasks=subtasks,
    )
    services.message_record_agent(
        session_id=session.pk, run_id=run.pk, role="assistant", content="", tool_calls=[create]
    )
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=agent,
        name=PLAN_NAME,
        description="Temples early, gardens at noon, one day trip to Nara; no rushing.",
        expected_outcome="A day-by-day itinerary with every booking confirmed.",
        subtasks=subtasks,
    )
    listing = "\n".join(f"{index}. {name}" for index, (name, _, _) in enumerate(STEPS))
    services.message_record_agent(
        session_id=session.pk,
        run_id=run.pk,
        role="tool",
        content=f"Created plan {plan.pk} ('{PLAN_NAME}') with 12 subtasks:\n{listing}",
        tool_call_id="call_plan",
        tool_name="create_plan",
    )
    services.messages_mark_seen(
        session_id=session.pk, up_to_message_id=ask.pk, run_id=run.pk, step_number=1
    )
    services.run_record_step(
        run_id=run.pk,
        session_id=session.pk,
        prompt_tokens=2810,
        completion_tokens=940,
        cost_usd=0.0061,
    )
    services.message_record_agent(
        session_id=session.pk, run_id=run.pk, role="assistant", content=PLAN_ANSWER
    )
    services.run_finish(run_id=run.pk, status="waiting_for_user", pause_reason="confirm")

    # The go-ahead: the same run resumes, now holding its lease for a day.
    go, run = services.message_post(
        session_id=session.pk, author=hana, content=GO_AHEAD, intent="confirm"
    )
    with override_settings(PLANBOARD_RUN_LEASE_SECONDS=86_400):
        services.run_start(run_id=run.pk, worker="seed")
    agent = Actor.agent(run)
    ids = [subtask.pk for subtask in plan.subtasks.order_by("position")]
    services.messages_mark_seen(
        session_id=session.pk, up_to_message_id=go.pk, run_id=run.pk, step_number=2
    )
    services.subtask_set_state(
        plan_id=plan.pk, actor=agent, subtask_id=ids[0], state="in_progress", in_order=True
    )
    start = _call("call_start", "update_subtask_state", subtask_idx=0, state="in_progress")
    calls = [(start, f"{_label(0)} is now in_progress.")]
    spend = [
        (3120, 610, "0.0048"),
        (3390, 720, "0.0054"),
        (2950, 480, "0.0041"),
        (3610, 530, "0.0052"),
    ]
    for index in range(DONE):
        outcome = str(STEPS[index][2])
        services.run_record_step(
            run_id=run.pk,
            session_id=session.pk,
            prompt_tokens=spend[index][0],
            completion_tokens=spend[index][1],
            cost_usd=float(spend[index][2]),
            plan_id=plan.pk,
            subtask_id=ids[index],
        )
        services.subtask_finish(
            plan_id=plan.pk, actor=agent, subtask_id=ids[index], outcome=outcome
        )
        finish = _call(
            f"call_finish_{index}", "finish_subtask", subtask_idx=index, subtask_outcome=outcome
        )
        calls.append((finish, f"{_label(index)} is done."))
    _tool_step(session.pk, run.pk, calls)
    services.subtask_set_state(
        plan_id=plan.pk,
        actor=agent,
        subtask_id=ids[DROPPED],
        state="abandoned",
        outcome="Rain forecast for the 9th",
    )
    drop = _call("call_drop", "update_subtask_state", subtask_idx=DROPPED, state="abandoned")
    _tool_step(session.pk, run.pk, [(drop, f"{_label(DROPPED)} is now abandoned.")])
    services.message_record_agent(
        session_id=session.pk, run_id=run.pk, role="assistant", content=PROGRESS_ANSWER
    )
    # Written while the agent works: it reads it at its next step.
    services.message_post(session_id=session.pk, author=hana, content=LATER)
    history = [_past_plan(hana, past) for past in PAST_PLANS]
    return {"session": int(session.pk), "plan": int(plan.pk), "history": history}


@dataclass(frozen=True)
class PastPlan:
    """A plan of hana's history: finished (or abandoned) `days_ago`, `done` of its steps done."""

    name: str
    description: str
    steps: tuple[str, ...]
    done: int
    state: str
    outcome: str
    tokens: int
    cost: str
    days_ago: int


PAST_PLANS = [
    PastPlan(
        "Weekend in Osaka",
        "Two nights in Namba with one day at the castle and one for food.",
        ("Book a hotel in Namba", "Reserve okonomiyaki", "Castle tickets", "Pack light"),
        4,
        "done",
        "Booked; tickets in the shared folder.",
        14_820,
        "0.031",
        9,
    ),
    PastPlan(
        "Team offsite in Hakone",
        "Twelve people, two nights, one workshop day and an onsen evening.",
        (
            "Compare three ryokan",
            "Book the Romancecar seats",
            "Reserve a meeting room",
            "Plan the onsen evening",
            "Send the agenda",
        ),
        5,
        "done",
        "Twelve people booked; agenda sent.",
        41_230,
        "0.094",
        16,
    ),
    PastPlan(
        "Lisbon in October",
        "A week in Lisbon with a day in Sintra.",
        ("Flights under 600 euros", "Pick a neighbourhood", "Sintra day trip", "Fado night"),
        1,
        "abandoned",
        "Postponed to spring.",
        6_410,
        "0.012",
        23,
    ),
    PastPlan(
        "Move the studio to Nakameguro",
        "Find movers, change the address everywhere, keep the week's shoots.",
        ("Get three quotes", "Book the movers", "Change the address", "Set up the new studio"),
        4,
        "done",
        "Moved on a Saturday; nothing broken.",
        28_940,
        "0.061",
        38,
    ),
    PastPlan(
        "Client dinner in Ginza",
        "Twelve guests, a private room, one short speech and cars home.",
        ("Choose a restaurant", "Send the invitations", "Book the cars", "Write the speech"),
        4,
        "done",
        "Twelve came; the client signed the next season.",
        19_375,
        "0.043",
        52,
    ),
]


def _past_plan(owner: Any, past: PastPlan) -> int:
    """A finished plan in a session of its own, with the run that did it and what it cost,
    recorded as if it happened `past.days_ago` days ago."""
    from django.utils import timezone

    from planboard import services
    from planboard.services import Actor

    finished = timezone.now().replace(
        hour=10 + past.days_ago % 8, minute=past.days_ago % 60, second=0, microsecond=0
    ) - timedelta(days=past.days_ago)
    # The services stamp rows with timezone.now(): started two hours before it finished.
    with mock.patch("django.utils.timezone.now", return_value=finished - timedelta(hours=2)):
        session = services.session_create(owner=owner, title=past.name)
        _, run = services.message_post(
            session_id=session.pk, author=owner, content=past.description
        )
        services.run_start(run_id=run.pk, worker="seed")
        agent = Actor.agent(run)
        plan, _ = services.plan_create(
            session_id=session.pk,
            actor=agent,
            name=past.name,
            description=past.description,
            subtasks=[{"name": name} for name in past.steps],
        )
        services.run_record_step(
            run_id=run.pk,
            session_id=session.pk,
            prompt_tokens=past.tokens * 4 // 5,
            completion_tokens=past.tokens - past.tokens * 4 // 5,
            cost_usd=float(past.cost),
            plan_id=plan.pk,
        )
        ids = list(plan.subtasks.order_by("position").values_list("pk", flat=True))
        services.subtask_set_state(
            plan_id=plan.pk, actor=agent, subtask_id=ids[0], state="in_progress"
        )
        # Finishing a subtask starts the next one, as the agent's finish_subtask does.
        for subtask_id in ids[: past.done]:
            services.subtask_finish(
                plan_id=plan.pk, actor=agent, subtask_id=subtask_id, outcome="Done"
            )
    with mock.patch("django.utils.timezone.now", return_value=finished):
        services.plan_finish(plan_id=plan.pk, actor=agent, state=past.state, outcome=past.outcome)
        services.run_finish(run_id=run.pk, status="succeeded")
    return int(plan.pk)
