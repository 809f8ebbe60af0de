"""The session page's "This session" figure: the snapshot's session total is what every run of
the session spent, the steps before a plan existed included; the `plan.usage` event after a
step carries it beside the plan's, so the page's two labelled figures move together."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from planboard import broadcast, selectors, services
from planboard.models import AgentRun, ChatSession, Plan
from tests.conftest import EventRecorder


def test_the_session_figure_is_the_sum_of_its_runs(
    chat_session: ChatSession,
    plan: Plan,
    events: EventRecorder,
    django_capture_on_commit_callbacks: Any,
) -> None:
    finished = AgentRun.objects.create(session=chat_session, status=AgentRun.Status.SUCCEEDED)
    current = AgentRun.objects.create(session=chat_session, status=AgentRun.Status.RUNNING)
    steps = [
        (finished, None, 1200, 300, 0.0125),  # before the plan: the session's, not the plan's
        (finished, plan.pk, 800, 100, 0.004),
        (current, plan.pk, 2000, 450, 0.0311),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        for run, plan_id, prompt, completion, cost in steps:
            services.run_record_step(
                run_id=run.pk,
                session_id=chat_session.pk,
                prompt_tokens=prompt,
                completion_tokens=completion,
                cost_usd=cost,
                plan_id=plan_id,
            )
    runs = AgentRun.objects.filter(session=chat_session)
    run_cost = sum((run.cost_usd for run in runs), Decimal(0))
    run_tokens = sum(run.prompt_tokens + run.completion_tokens for run in runs)
    assert run_tokens == 1200 + 300 + 800 + 100 + 2000 + 450

    snapshot = selectors.session_snapshot(session_id=chat_session.pk)
    assert Decimal(str(snapshot["spent_usd"])) == run_cost
    assert snapshot["spent_tokens"] == run_tokens
    # The plan's figure leaves out the step before it: two scopes, two different figures.
    assert snapshot["usage"]["tokens"] == run_tokens - 1500

    # One event per step on the plan, each with the session's total as it then was.
    group = broadcast.session_group(chat_session.pk)
    heard = [e for g, e in events.items if g == group and e["type"] == "plan.usage"]
    assert [event["session"]["tokens"] for event in heard] == [2400, run_tokens]
    assert Decimal(str(heard[-1]["session"]["cost_usd"])) == run_cost
    assert heard[-1]["tokens"] == snapshot["usage"]["tokens"]
