"""In-process models are named in `settings.PLANBOARD_LOCAL_MODELS` and loaded lazily
(`agents/local_models.py`); the LLM boundary itself knows none of them (no import circle between
`agents.llm` and the demo, nor between it and `agents.local_models`)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from agents import llm, local_models
from agents.local_models import ProviderReply

ROOT = Path(__file__).resolve().parents[2]
CREATED: list[str] = []


class CountingModel:
    """Records its construction, so the test can see when the map's class is instantiated."""

    def __init__(self) -> None:
        CREATED.append("made")

    def respond(self, *, model: str, messages: list[Any], tools: Any) -> ProviderReply:
        return ProviderReply(content=f"hello from {model}")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    modules = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    names = {
        f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    plain = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    return modules | names | plain


def test_the_llm_boundary_does_not_import_the_demo_model() -> None:
    modules = sorted((ROOT / "agents" / "llm").glob("*.py"))
    assert modules
    for module in modules:
        assert not any("demo" in name for name in imports_of(module)), module.name


def test_local_models_need_neither_litellm_nor_the_llm_boundary() -> None:
    """`agents.llm` builds on `agents.local_models`, never the other way round, and only
    `agents.llm` speaks to litellm."""
    imported = imports_of(ROOT / "agents" / "local_models.py")
    assert not any(name.startswith(("litellm", "agents.llm", "agents.demo")) for name in imported)


def test_a_mapped_class_is_instantiated_on_first_use_only(settings: Any) -> None:
    CREATED.clear()
    settings.PLANBOARD_LOCAL_MODELS = {"counting": f"{__name__}.CountingModel"}
    assert CREATED == []  # naming it in the settings loads nothing
    assert local_models.is_local_model("counting/one")
    first = llm.complete(messages=[{"role": "user", "content": "hi"}], model="counting/one")
    second = llm.complete(messages=[{"role": "user", "content": "hi"}], model="counting/two")
    assert (first.content, second.content) == ("hello from one", "hello from two")
    assert CREATED == ["made"]


def test_a_provider_removed_from_the_map_is_forgotten(settings: Any) -> None:
    settings.PLANBOARD_LOCAL_MODELS = {"counting": f"{__name__}.CountingModel"}
    llm.complete(messages=[{"role": "user", "content": "hi"}], model="counting/x")
    settings.PLANBOARD_LOCAL_MODELS = {}
    assert not local_models.is_local_model("counting/x")
    with pytest.raises(llm.LLMError):
        llm.complete(messages=[{"role": "user", "content": "hi"}], model="counting/x")


def test_the_demo_model_is_reached_through_the_default_map(settings: Any) -> None:
    assert "planboard-demo" in settings.PLANBOARD_LOCAL_MODELS
    settings.PLANBOARD_DEMO_STEP_DELAY = 0
    result = llm.complete(
        messages=[{"role": "user", "content": "Plan a three-day trip to Kyoto"}],
        model="planboard-demo/offline",
    )
    assert result.content or result.tool_calls


class CallCounter:
    calls = 0

    def respond(self, *, model: str, messages: list[Any], tools: Any) -> ProviderReply:
        CallCounter.calls += 1
        return ProviderReply(content="real answer")


def test_warm_up_exercises_litellm_without_asking_any_model(settings: Any) -> None:
    CallCounter.calls = 0
    settings.PLANBOARD_LOCAL_MODELS = {"counter": f"{__name__}.CallCounter"}
    settings.PLANBOARD_LLM_MODEL = "counter/m"
    assert llm.warm_up() >= 0
    assert CallCounter.calls == 0  # mocked answers only: no model, no network
    assert llm.complete(messages=[{"role": "user", "content": "hi"}]).content == "real answer"


def test_workers_warm_up_when_they_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from celery.signals import worker_init, worker_process_init

    from agents import tasks

    warmed: list[str] = []
    monkeypatch.setattr(llm, "warm_up", lambda model=None: warmed.append("yes") or 0.0)
    monkeypatch.setattr(tasks, "_warmed_pids", set())
    worker_init.send(sender=None)
    worker_process_init.send(sender=None)  # same process: warmed once only
    assert warmed == ["yes"]


class PricedModel:
    price_per_token = 0.000003

    def respond(self, *, model: str, messages: list[Any], tools: Any) -> ProviderReply:
        return ProviderReply(content="ok", prompt_tokens=10, completion_tokens=2)


def test_litellm_is_told_an_in_process_models_price_once(settings: Any) -> None:
    """litellm prices every answer for itself; told the price, it finds the model at once
    instead of searching its price list under many spellings (a third of a local call)."""
    import litellm  # noqa: TID251 - the test checks what agents.llm told litellm

    settings.PLANBOARD_LOCAL_MODELS = {"priced": f"{__name__}.PricedModel"}
    result = llm.complete(messages=[{"role": "user", "content": "hi"}], model="priced/small")
    known = litellm.model_cost["priced/small"]
    assert known["input_cost_per_token"] == known["output_cost_per_token"] == 0.000003
    # Our own cost still comes from the model's price.
    assert result.cost_usd == pytest.approx(12 * 0.000003)


class ChattyModel:
    """Streams text word by word, then two tool calls."""

    def respond(self, **kwargs: Any) -> ProviderReply:
        raise AssertionError("streamed only")

    def stream(self, **kwargs: Any) -> Any:
        for word in ("Let ", "me ", "plan ", "that **now**."):
            yield ProviderReply(content=word)
        yield ProviderReply(
            tool_calls=[
                {"id": "a", "type": "function", "function": {"name": "one", "arguments": "{}"}},
                {
                    "id": "b",
                    "type": "function",
                    "function": {"name": "two", "arguments": '{"x": 1}'},
                },
            ],
            prompt_tokens=40,
            completion_tokens=9,
        )


def test_a_local_streamed_answer_is_joined_as_litellms_builder_would(settings: Any) -> None:
    """The hand joiner stays because litellm's builder takes about ten times as long on these
    chunks (agents/local_models.py:join_chunks); this keeps the two giving the same answer."""
    import litellm  # noqa: TID251 - compared with litellm's own chunk builder

    settings.PLANBOARD_LOCAL_MODELS = {"chatty": f"{__name__}.ChattyModel"}
    llm._sync_providers()
    messages = [{"role": "user", "content": "hi"}]
    chunks = list(
        litellm.completion(
            model="chatty/m", messages=messages, stream=True, stream_options={"include_usage": True}
        )
    )
    ours = local_models.join_chunks(chunks)
    theirs = litellm.stream_chunk_builder(chunks, messages=messages)
    assert ours is not None and theirs is not None
    assert ours.reply.content == theirs.choices[0].message.content == "Let me plan that **now**."
    assert ours.finish_reason == theirs.choices[0].finish_reason == "tool_calls"
    assert (ours.reply.prompt_tokens, ours.reply.completion_tokens) == (40, 9)
    assert (theirs.usage.prompt_tokens, theirs.usage.completion_tokens) == (40, 9)
    assert ours.reply.tool_calls == llm._normalise_tool_calls(theirs.choices[0].message.tool_calls)
    assert [call["function"]["name"] for call in ours.reply.tool_calls] == ["one", "two"]
    # Without a usage chunk the general builder is used (it counts the tokens itself).
    assert local_models.join_chunks(chunks[:-1]) is None
    # The whole call streams its text to the listener and gives the same answer.
    pieces: list[str] = []
    result = llm.complete(
        messages=messages, model="chatty/m", listener=llm.StreamListener(on_text=pieces.append)
    )
    assert "".join(pieces) == result.content == "Let me plan that **now**."
    assert [c["id"] for c in result.tool_calls] == ["a", "b"]
    assert (result.prompt_tokens, result.completion_tokens) == (40, 9)
