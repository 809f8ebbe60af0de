"""The litellm boundary against an OpenAI-compatible server on loopback, and its retry rules."""

from __future__ import annotations

from typing import Any

import pytest

from agents import llm, loop, tools
from agents.models import AgentStep
from planboard import services
from planboard.models import AgentRun, Message
from tests.support.openai_server import FakeOpenAI
from tests.support.scripted import ScriptedModel, call, error, say

MESSAGES = [{"role": "user", "content": "Plan a trip"}]


def test_a_hosted_model_gets_the_key_the_base_url_and_the_tools(openai_server: FakeOpenAI):
    plan_call = call("create_plan", name="Trip", subtasks=[])
    openai_server.answer(calls=[plan_call])
    result = llm.complete(messages=MESSAGES, tools=tools.TOOL_SCHEMAS)

    (request,) = openai_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test-123"
    assert request["body"]["model"] == "gpt-4o-mini"
    assert request["body"]["messages"] == MESSAGES
    assert [t["function"]["name"] for t in request["body"]["tools"]] == [
        t["function"]["name"] for t in tools.TOOL_SCHEMAS
    ]
    assert result.tool_calls == [plan_call]
    assert result.content == ""
    assert (result.prompt_tokens, result.completion_tokens) == (1000, 100)
    assert result.cost_usd > 0  # priced from litellm's local cost map
    assert result.attempts == 1 and result.model == "openai/gpt-4o-mini"


def test_unknown_models_cost_nothing(openai_server: FakeOpenAI, settings: Any):
    settings.PLANBOARD_LLM_MODEL = "openai/my-own-llama"
    openai_server.answer("hello", model="my-own-llama")
    result = llm.complete(messages=MESSAGES)
    assert result.content == "hello" and result.cost_usd == 0.0
    assert "tools" not in openai_server.requests[0]["body"]


@pytest.mark.parametrize("status", [429, 500, 503])
def test_transient_http_errors_are_retried(openai_server: FakeOpenAI, status: int):
    openai_server.fail(status)
    openai_server.answer("finally")
    result = llm.complete(messages=MESSAGES)
    assert result.content == "finally" and result.attempts == 2
    assert len(openai_server.requests) == 2


def test_rate_limits_fail_readably_after_three_attempts(openai_server: FakeOpenAI):
    for _ in range(3):
        openai_server.fail(429, "Rate limit reached for requests")
    with pytest.raises(llm.LLMError) as caught:
        llm.complete(messages=MESSAGES)
    assert caught.value.attempts == 3 and caught.value.transient
    assert "could not be reached after 3 attempts (RateLimitError)" in caught.value.message
    assert "Rate limit reached" in caught.value.message
    assert len(openai_server.requests) == 3


def test_timeouts_are_retried(openai_server: FakeOpenAI, settings: Any):
    settings.PLANBOARD_LLM_TIMEOUT = 0.5
    openai_server.answer("too slow")
    openai_server.replies[-1] = (*openai_server.replies[-1][:2], 5.0)
    openai_server.answer("in time")
    result = llm.complete(messages=MESSAGES)
    assert result.content == "in time" and result.attempts == 2


def test_a_bad_request_is_not_retried(openai_server: FakeOpenAI):
    openai_server.fail(400, "messages: invalid role")
    with pytest.raises(llm.LLMError) as caught:
        llm.complete(messages=MESSAGES)
    assert caught.value.attempts == 1 and not caught.value.transient
    assert "refused the request" in caught.value.message
    assert len(openai_server.requests) == 1


def test_a_connection_refused_is_retried_then_reported(settings: Any):
    settings.PLANBOARD_LLM_MODEL = "openai/gpt-4o-mini"
    settings.PLANBOARD_LLM_API_BASE = "http://127.0.0.1:9/v1"  # nothing listens there
    settings.PLANBOARD_LLM_API_KEY = "sk-test"
    settings.PLANBOARD_LLM_RETRY_DELAY = 0
    with pytest.raises(llm.LLMError) as caught:
        llm.complete(messages=MESSAGES)
    assert caught.value.attempts == 3 and caught.value.transient


def test_a_whole_run_against_an_openai_compatible_server(openai_server: FakeOpenAI, user):
    session = services.session_create(owner=user, need_user_confirm=False)
    openai_server.answer(
        calls=[
            call(
                "create_plan",
                name="Trip",
                description="",
                expected_outcome="",
                subtasks=[{"name": "Book flights", "description": "", "expected_outcome": ""}],
            )
        ]
    )
    openai_server.answer("Planned your trip.")
    _, run = services.message_post(session_id=session.pk, author=user, content="Plan a trip")
    run = loop.execute_run(run_id=run.pk)

    assert run.status == AgentRun.Status.SUCCEEDED
    assert run.model == "openai/gpt-4o-mini"
    assert (run.prompt_tokens, run.completion_tokens) == (2000, 200)
    assert run.cost_usd > 0
    second = openai_server.requests[1]["body"]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "user"]
    assert "- [ ] 0. Book flights" in second[-1]["content"]
    steps = AgentStep.objects.filter(run=run)
    assert sum(s.cost_usd for s in steps) == run.cost_usd
    assert Message.objects.filter(session=session, role="assistant").count() == 2


# --- in-process providers ------------------------------------------------------------------


def test_backoff_doubles_between_attempts(scripted_model: ScriptedModel, settings: Any):
    settings.PLANBOARD_LLM_RETRY_DELAY = 1.5
    scripted_model.script.extend([error("rate_limit"), error("unavailable"), say("ok")])
    waits: list[float] = []
    result = llm.complete(messages=MESSAGES, sleep=waits.append)
    assert result.attempts == 3 and waits == [1.5, 3.0]


def test_the_number_of_attempts_is_a_setting(scripted_model: ScriptedModel, settings: Any):
    settings.PLANBOARD_LLM_ATTEMPTS = 1
    scripted_model.script.extend([error("timeout")])
    with pytest.raises(llm.LLMError) as caught:
        llm.complete(messages=MESSAGES)
    assert caught.value.attempts == 1 and "Timeout" in caught.value.message


def test_a_request_too_long_for_the_model_is_trimmed_harder(scripted_model: ScriptedModel, user):
    session = services.session_create(owner=user, need_user_confirm=False)
    scripted_model.script.extend([error("context", "maximum context length exceeded"), say("ok")])
    _, run = services.message_post(session_id=session.pk, author=user, content="Hello")
    run = loop.execute_run(run_id=run.pk)

    assert run.status == AgentRun.Status.SUCCEEDED
    statuses = list(
        AgentStep.objects.filter(run=run).order_by("number").values_list("status", flat=True)
    )
    assert statuses == [AgentStep.Status.FAILED, AgentStep.Status.COMPLETED]


def test_the_demo_model_is_the_default(settings: Any):
    assert llm.configured_model() == "planboard-demo/offline"
    settings.PLANBOARD_DEMO_STEP_DELAY = 0
    result = llm.complete(
        messages=[{"role": "user", "content": "Plan a three-day trip to Kyoto"}],
        tools=tools.TOOL_SCHEMAS,
    )
    assert [c["function"]["name"] for c in result.tool_calls] == ["create_plan"]
    # The demo names a made-up price, so the board has costs to show.
    tokens = result.prompt_tokens + result.completion_tokens
    assert result.prompt_tokens > 0
    assert result.cost_usd == pytest.approx(
        tokens * settings.PLANBOARD_DEMO_PRICE_PER_1K_TOKENS / 1000
    )


def test_token_counts_and_budgets(settings: Any):
    settings.PLANBOARD_LLM_CONTEXT_TOKENS = 500_000
    assert llm.context_budget("openai/gpt-4o-mini") == 128_000  # the model's own limit wins
    assert llm.context_budget("planboard-demo/offline") == 500_000
    assert llm.context_budget("openai/unknown-model") == 500_000
    short = llm.count_tokens(messages=[{"role": "user", "content": "hi"}])
    long = llm.count_tokens(messages=[{"role": "user", "content": "hi " * 1000}])
    assert 0 < short < long


def test_a_model_string_litellm_does_not_know_fails_readably(settings: Any):
    settings.PLANBOARD_LLM_MODEL = "no-such-provider/some-model"
    settings.PLANBOARD_LLM_RETRY_DELAY = 0
    with pytest.raises(llm.LLMError) as caught:
        llm.complete(messages=MESSAGES)
    assert caught.value.attempts == 1 and not caught.value.transient
    assert "no-such-provider/some-model" in caught.value.message
