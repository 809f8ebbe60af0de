"""Spending limits that hold: each model call is checked before it is made and its
answer capped by what is left; a person's budget per profile and period holds across all
their sessions; a dollar limit on a model nobody can price stops the run instead of being
ignored. Hosted calls go to an OpenAI-compatible server on loopback, whose recorded requests
show what was asked for; per-person budgets use the scripted model."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from agents import budgets, loop
from agents.local_models import ProviderReply
from agents.models import AgentStep
from planboard import services
from planboard.exceptions import PlanError
from planboard.models import AgentProfile, AgentRun, ChatSession, ProfileUsage
from tests.support import db
from tests.support.openai_server import FakeOpenAI
from tests.support.scripted import ScriptedModel, call

# gpt-4o-mini's list price (litellm's price map): US dollars per token.
MINI_INPUT = Decimal("0.15") / 1_000_000
MINI_OUTPUT = Decimal("0.60") / 1_000_000
MINI_MAX_OUTPUT = 16384


def new_session(user: Any, **settings: Any) -> ChatSession:
    session = services.session_create(owner=user, need_user_confirm=False)
    if settings:
        services.session_update(session_id=session.pk, **settings)
    return session


def start(session: ChatSession, user: Any, text: str = "Go on") -> AgentRun:
    _, run = services.message_post(session_id=session.pk, author=user, content=text)
    return loop.execute_run(run_id=run.pk)


def steps(run: AgentRun) -> list[AgentStep]:
    return list(AgentStep.objects.filter(run=run).order_by("number"))


def bodies(server: FakeOpenAI) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests]


# --- checked before each call, the answer capped ------------------------------------------------


def test_without_limits_the_answer_is_not_capped(openai_server: FakeOpenAI, user: Any) -> None:
    openai_server.answer("Hi.")
    assert start(new_session(user), user).status == AgentRun.Status.SUCCEEDED
    assert "max_tokens" not in bodies(openai_server)[0]


def test_the_answer_is_capped_by_the_tokens_left(openai_server: FakeOpenAI, user: Any) -> None:
    session = new_session(user, budget_tokens=12_000)
    openai_server.answer(calls=[call("get_subtask_count")])
    openai_server.answer("Done.")
    run = start(session, user)

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    first, second = steps(run)
    sent = bodies(openai_server)
    # The prompt counts too: what is left after it is what the answer may use.
    assert sent[0]["max_tokens"] == 12_000 - first.request_tokens
    assert sent[1]["max_tokens"] == 12_000 - 1100 - second.request_tokens  # 1100: step 1


def test_a_prompt_bigger_than_what_is_left_is_never_sent(
    openai_server: FakeOpenAI, user: Any
) -> None:
    session = new_session(user, budget_tokens=500)
    run = start(session, user)

    assert run.status == AgentRun.Status.WAITING_FOR_USER
    assert run.pause_reason == AgentRun.PAUSE_BUDGET
    assert openai_server.requests == [] and run.step_count == 0
    assert "500 token limit" in run.error and "Raise the limit" in run.error
    session.refresh_from_db()
    assert session.spent_tokens == 0


def test_a_dollar_limit_caps_the_answer_at_the_output_price(
    openai_server: FakeOpenAI, user: Any
) -> None:
    session = new_session(user, budget_usd=Decimal("0.005"))
    openai_server.answer("Hi.")
    run = start(session, user)

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    (step,) = steps(run)
    left = Decimal("0.005") - step.request_tokens * MINI_INPUT
    expected = int(left / MINI_OUTPUT)
    assert expected < MINI_MAX_OUTPUT
    assert bodies(openai_server)[0]["max_tokens"] == expected


def test_the_tightest_limit_wins_and_the_models_own_maximum_caps_all(
    openai_server: FakeOpenAI, user: Any
) -> None:
    services.profile_create(name="small", model="openai/gpt-4o-mini", budget_tokens=6_000)
    session = new_session(user, budget_tokens=12_000, profile="small")
    openai_server.answer("Hi.")
    run = start(session, user)
    (step,) = steps(run)
    assert bodies(openai_server)[0]["max_tokens"] == 6_000 - step.request_tokens

    roomy = new_session(user, budget_tokens=10_000_000)
    openai_server.answer("Hi.")
    start(roomy, user)
    assert bodies(openai_server)[1]["max_tokens"] == MINI_MAX_OUTPUT


# --- a person's budget per profile and period ---------------------------------------------------


def big_step(*, final: bool = False) -> ProviderReply:
    """A step that reports 100,000 tokens of prompt."""
    if final:
        return ProviderReply(content="Done.", prompt_tokens=100_000)
    return ProviderReply(tool_calls=[call("get_subtask_count")], prompt_tokens=100_000)


def test_a_persons_budget_holds_across_new_sessions(
    user: Any, other_user: Any, scripted_model: ScriptedModel
) -> None:
    profile = services.profile_create(
        name="pricey", model="scripted/model", user_budget_tokens=200_000, user_budget_period="day"
    )
    scripted_model.script.extend([big_step(), big_step(final=True)])
    first = start(new_session(user, profile="pricey"), user)
    assert first.status == AgentRun.Status.SUCCEEDED, first.error
    today = timezone.now().date()
    usage = ProfileUsage.objects.get(user=user, profile=profile)
    assert (usage.period_start, usage.spent_tokens) == (today, 200_000)

    # A fresh session does not start the count again.
    second = start(new_session(user, profile="pricey"), user)
    assert second.status == AgentRun.Status.WAITING_FOR_USER
    assert second.pause_reason == AgentRun.PAUSE_BUDGET and second.step_count == 0
    assert len(scripted_model.requests) == 2
    assert "'pricey'" in second.error and "per day" in second.error
    tomorrow = today + timedelta(days=1)
    assert f"resets on {tomorrow:%A %Y-%m-%d} at 00:00 UTC" in second.error

    # Someone else's budget is their own.
    scripted_model.script.append(big_step(final=True))
    third = start(new_session(other_user, profile="pricey"), other_user)
    assert third.status == AgentRun.Status.SUCCEEDED, third.error


def test_only_the_current_period_counts(user: Any, scripted_model: ScriptedModel) -> None:
    profile = services.profile_create(
        name="monthly", model="scripted/model", user_budget_tokens=150_000
    )
    assert profile.user_budget_period == "month"
    start_of_month, _ = budgets.period_bounds("month", timezone.now())
    ProfileUsage.objects.create(
        user=user,
        profile=profile,
        period_start=start_of_month - timedelta(days=1),
        spent_tokens=10_000_000,
    )
    scripted_model.script.append(big_step(final=True))
    assert start(new_session(user, profile="monthly"), user).status == AgentRun.Status.SUCCEEDED

    # Spending recorded earlier this month counts with today's.
    services.profile_usage_add(
        user_id=user.pk, profile_id=profile.pk, day=start_of_month, cost_usd=0, tokens=60_000
    )
    paused = start(new_session(user, profile="monthly"), user)
    assert paused.pause_reason == AgentRun.PAUSE_BUDGET, paused.error
    assert "per month" in paused.error


@pytest.mark.parametrize(
    ("period", "now", "start", "reset"),
    [
        ("day", datetime(2026, 3, 1, 23, 59, tzinfo=UTC), date(2026, 3, 1), date(2026, 3, 2)),
        # Weeks start on Monday: 2026-03-01 is a Sunday.
        ("week", datetime(2026, 3, 1, 12, 0, tzinfo=UTC), date(2026, 2, 23), date(2026, 3, 2)),
        ("week", datetime(2026, 3, 2, 0, 0, tzinfo=UTC), date(2026, 3, 2), date(2026, 3, 9)),
        ("month", datetime(2026, 12, 31, 8, 0, tzinfo=UTC), date(2026, 12, 1), date(2027, 1, 1)),
        ("month", datetime(2026, 2, 1, 0, 0, tzinfo=UTC), date(2026, 2, 1), date(2026, 3, 1)),
        # The period is UTC's, whatever zone the time is given in (01:30 on 2 March there).
        (
            "day",
            datetime(2026, 3, 1, 23, 30, tzinfo=UTC).astimezone(timezone.get_fixed_timezone(120)),
            date(2026, 3, 1),
            date(2026, 3, 2),
        ),
    ],
)
def test_periods_start_and_reset_in_utc(period: str, now: datetime, start: date, reset: date):
    assert budgets.period_bounds(period, now) == (start, reset)


# --- a price nobody knows -----------------------------------------------------------------------


def test_a_dollar_limit_on_a_model_without_a_price_stops_before_the_call(
    openai_server: FakeOpenAI, user: Any, settings: Any
) -> None:
    settings.PLANBOARD_LLM_MODEL = "openai/my-own-llama"
    run = start(new_session(user, budget_usd=Decimal(1)), user)

    assert run.status == AgentRun.Status.WAITING_FOR_USER
    assert run.pause_reason == AgentRun.PAUSE_BUDGET
    assert openai_server.requests == [] and run.step_count == 0
    assert "openai/my-own-llama" in run.error and "price" in run.error
    assert "profile" in run.error  # what an admin can do about it


def test_a_profiles_dollar_limit_without_a_price_names_the_profile_to_fix(
    openai_server: FakeOpenAI, user: Any
) -> None:
    services.profile_create(name="llama", model="openai/my-own-llama", user_budget_usd=Decimal(5))
    run = start(new_session(user, profile="llama"), user)
    assert run.pause_reason == AgentRun.PAUSE_BUDGET and openai_server.requests == []
    assert "'llama'" in run.error and "price_input_per_mtok" in run.error


def test_configured_prices_count_the_cost(openai_server: FakeOpenAI, user: Any) -> None:
    profile = services.profile_create(
        name="priced",
        model="openai/my-own-llama",
        budget_usd=Decimal(1),
        price_input_per_mtok=Decimal(2),
        price_output_per_mtok=Decimal(4),
    )
    openai_server.answer("Hi.", model="my-own-llama")
    session = new_session(user, profile="priced")
    run = start(session, user)

    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    (step,) = steps(run)
    cost = Decimal(1000 * 2 + 100 * 4) / 1_000_000  # the server reports 1000 + 100 tokens
    assert step.cost_usd == cost
    session.refresh_from_db()
    assert session.spent_usd == cost
    assert ProfileUsage.objects.get(user=user, profile=profile).spent_usd == cost
    left = Decimal(1) - step.request_tokens * Decimal(2) / 1_000_000
    assert bodies(openai_server)[0]["max_tokens"] == int(left / (Decimal(4) / 1_000_000))


def test_prices_come_in_pairs_and_periods_are_known(db: Any) -> None:
    with pytest.raises(PlanError, match="both"):
        services.profile_create(name="half", price_input_per_mtok=Decimal(1))
    profile = services.profile_create(
        name="full", price_input_per_mtok=Decimal(1), price_output_per_mtok=Decimal(3)
    )
    with pytest.raises(PlanError, match="both"):
        services.profile_update(profile_id=profile.pk, price_output_per_mtok=None)
    assert AgentProfile.objects.get(pk=profile.pk).price_output_per_mtok == Decimal(3)
    with pytest.raises(PlanError, match="day, week or month"):
        services.profile_update(profile_id=profile.pk, user_budget_period="year")
    with pytest.raises(PlanError, match="0 or more"):
        services.profile_update(profile_id=profile.pk, user_budget_tokens=-5)


# --- recording, under concurrency ---------------------------------------------------------------


def test_usage_added_at_the_same_moment_is_never_lost(postgres: None, django_user_model: Any):
    import threading

    owner = django_user_model.objects.create_user("spender")
    profile = services.profile_create(name="shared")
    day = timezone.now().date()
    rounds, workers = 20, 4
    barrier = threading.Barrier(workers)
    errors: list[BaseException] = []

    def spend() -> None:
        try:
            barrier.wait(timeout=30)
            for _ in range(rounds):
                services.profile_usage_add(
                    user_id=owner.pk,
                    profile_id=profile.pk,
                    day=day,
                    cost_usd=Decimal("0.01"),
                    tokens=10,
                )
        except BaseException as exc:  # surfaced to the test thread below
            errors.append(exc)
        finally:
            db.close_thread_connections()

    threads = [threading.Thread(target=spend) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    usage = ProfileUsage.objects.get(user=owner, profile=profile, period_start=day)
    assert usage.spent_tokens == rounds * workers * 10
    assert usage.spent_usd == Decimal("0.01") * rounds * workers
