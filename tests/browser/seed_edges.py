"""Seed data for the consistency and edge pages (tests/browser/test_edges.py and the
accessibility check): a person ("mika") whose session has a long title and a twelve-step plan
the agent worked on, and finished plans with what they cost, for the history list."""

from __future__ import annotations

from typing import Any

from tests.browser.seed_links import STEPS

LONG_TITLE = (
    "Kyoto in spring with the whole family: flights, a ryokan near Gion, temples, gardens, "
    "a day in Nara and a rain plan for every afternoon"
)


def _spend(
    author: Any, session_id: int, plan_id: int, costs: list[tuple[int, str, int | None]]
) -> None:
    """One finished run whose steps spent `(tokens, dollars, subtask)` each; the first step
    before the plan existed counts for the run and the session only, as the agent's does."""
    from planboard import services

    _, run = services.message_post(session_id=session_id, author=author, content="Go ahead")
    services.run_start(run_id=run.pk, worker="seed")
    for tokens, cost, subtask_id in costs:
        services.run_record_step(
            run_id=run.pk,
            session_id=session_id,
            prompt_tokens=tokens * 3 // 4,
            completion_tokens=tokens - tokens * 3 // 4,
            cost_usd=float(cost),
            plan_id=plan_id if subtask_id != -1 else None,
            subtask_id=subtask_id if subtask_id not in (None, -1) else None,
        )
    services.run_finish(run_id=run.pk, status="succeeded")


def seed_edges(mika: Any) -> dict[str, Any]:
    from planboard import services
    from planboard.services import Actor

    me = Actor.person(mika)
    session = services.session_create(owner=mika, title=LONG_TITLE)
    plan, _ = services.plan_create(
        session_id=session.pk,
        actor=me,
        name="Kyoto in spring",
        description="Five calm days in Kyoto with a day trip to Nara.",
        expected_outcome="A day-by-day itinerary with bookings.",
        subtasks=[{"name": name} for name in STEPS],
    )
    ids = [s.pk for s in plan.subtasks.order_by("position")]
    for subtask_id in ids[:3]:
        services.subtask_set_state(plan_id=plan.pk, actor=me, subtask_id=subtask_id, state="done")
    services.subtask_set_state(plan_id=plan.pk, actor=me, subtask_id=ids[3], state="in_progress")
    _spend(
        mika,
        session.pk,
        plan.pk,
        [(3663, "0.0073", -1), (4102, "0.0082", ids[0]), (2377, "0.0048", ids[1])],
    )
    _spend(mika, session.pk, plan.pk, [(2262, "0.0045", ids[3])])

    # Finished plans for the history list: small and large costs, one that cost nothing.
    finished = []
    for title, cost, tokens in (
        ("Weekend in Osaka", "0.0175", 8741),
        ("Move the team offsite", "1.234", 412_904),
        ("Quiet week at home", "0", 0),
    ):
        past = services.session_create(owner=mika, title=title)
        past_plan, _ = services.plan_create(
            session_id=past.pk,
            actor=me,
            name=title,
            description="Finished; kept for review.",
            subtasks=[{"name": "Decide"}, {"name": "Book"}],
        )
        for subtask in past_plan.subtasks.all():
            services.subtask_set_state(
                plan_id=past_plan.pk, actor=me, subtask_id=subtask.pk, state="done"
            )
        if tokens:
            _spend(mika, past.pk, past_plan.pk, [(tokens, cost, None)])
        services.plan_finish(plan_id=past_plan.pk, actor=me, state="done", outcome="Done")
        finished.append(past_plan.pk)
    return {"session": session.pk, "plan": plan.pk, "history_plans": finished}
