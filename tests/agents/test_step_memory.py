"""What an agent step reads of the tools it offers grows linearly with them: a
step never reads a toolset's cached listing (which lists every tool of the toolset, so one copy
per offered tool made a step quadratic) nor its secrets and start-up configuration."""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

import pytest

from agents import context, external_tools, llm, tools
from planboard import services
from planboard.models import AgentRun, ChatSession, Toolset
from tests.support import db

pytestmark = pytest.mark.django_db

TOOLS = 1000
# What no statement of a step may select: the listing, the secrets, how the server starts.
UNUSED_COLUMNS = ("tools_cache", "env", "headers", "command", "args", "url")


def _selects(sql: str, column: str) -> bool:
    table = Toolset._meta.db_table
    return f'"{table}"."{column}"' in sql or f"{table}.{column}" in sql


@pytest.fixture
def big_toolset(staff: Any, settings: Any) -> Toolset:
    """An http toolset offering 1000 tools, with a cached listing as large as a real one."""
    settings.PLANBOARD_TOOLSET_MAX_TOOLS = TOOLS
    settings.PLANBOARD_TOOLSET_SCHEMA_MAX_BYTES = 10_000_000
    toolset = services.toolset_create(
        user=staff,
        name="big",
        kind="http",
        url="http://127.0.0.1:9/mcp",
        headers={"Authorization": "Bearer secret-value-1234"},
    )
    listed = [
        {
            "name": f"tool_{n:04d}",
            "description": f"Tool number {n}.",
            "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}},
            "read_only": True,
        }
        for n in range(TOOLS)
    ]
    services.toolset_refresh_tools(toolset_id=toolset.pk, tools=listed)
    # A cached listing of just the tools' names (~12 KB; real ones carry schemas too).
    Toolset.objects.filter(pk=toolset.pk).update(tools_cache=[t["name"] for t in listed])
    return toolset


@pytest.fixture
def run(user: Any, big_toolset: Toolset) -> AgentRun:
    session = services.session_create(owner=user, title="Many tools", need_user_confirm=False)
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[big_toolset.pk])
    _, queued = services.message_post(session_id=session.pk, author=user, content="Go")
    assert queued is not None
    return queued


def test_a_step_reads_no_listing_secrets_or_configuration(run: AgentRun) -> None:
    with db.statements() as step:
        request = context.build_request(run=run)
    assert len([t for t in request.tools if t["function"]["name"].startswith("big__")]) == TOOLS
    for sql in step:
        for column in UNUSED_COLUMNS:
            assert not _selects(sql, column), (column, sql[:300])


def test_a_call_reads_no_listing(run: AgentRun) -> None:
    """Calling a tool needs how to reach its server (and its secrets), never the listing."""
    services.run_start(run_id=run.pk, worker="w")
    call = {"id": "c1", "function": {"name": "big__tool_0001", "arguments": '{"q": "x"}'}}
    with db.statements() as claimed:
        outcome = external_tools.handle_call(run=run, call=call, held=False)
    assert outcome == external_tools.Outcome.ANSWERED
    assert not any(_selects(sql, "tools_cache") for sql in claimed)
    session = ChatSession.objects.get(pk=run.session_id)
    answer = session.messages.get(tool_call_id="c1").content
    assert answer.startswith("Error: toolset 'big'")  # nothing listens on port 9


def test_a_steps_memory_stays_linear_in_the_tools_offered(run: AgentRun) -> None:
    context.build_request(run=run)  # warm caches (token counting, statements) first
    gc.collect()
    tracemalloc.start()
    try:
        request = context.build_request(run=run)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(request.tools) >= TOOLS
    # 1000 small tools are about 5 MB to read and offer; one copy of even this small listing
    # per offered tool would be about 75.
    assert peak < 16_000_000, f"a step's peak was {peak / 1e6:.1f} MB"


def _tokens(model: str, text: str) -> int:
    return llm.count_tokens(messages=[{"role": "system", "content": text}], model=model)


def test_the_requests_token_estimate_covers_the_plan_tools_and_the_servers_tools(
    run: AgentRun, user: Any
) -> None:
    session = services.session_create(owner=user, title="No servers", need_user_confirm=False)
    _, plain = services.message_post(session_id=session.pk, author=user, content="Go")
    for each, servers in ((plain, 0), (run, TOOLS)):
        request = context.build_request(run=each)
        plan = [t for t in request.tools if t["function"]["name"] in tools.TOOL_NAMES]
        external = [t for t in request.tools if t["function"]["name"] not in tools.TOOL_NAMES]
        assert len(plan) == len(tools.TOOL_SCHEMAS)
        assert len([t for t in external if t["function"]["name"].startswith("big__")]) == servers
        parts = (
            _tokens(request.model, request.messages[0]["content"])  # the system prompt
            + _tokens(request.model, request.hint)
            + _tokens(request.model, json.dumps(plan, ensure_ascii=False))
            + (_tokens(request.model, json.dumps(external, ensure_ascii=False)) if external else 0)
        )
        assert request.tokens >= parts
