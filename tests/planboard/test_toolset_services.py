"""Toolsets, session toolsets and tool-call records: the services' rules (no MCP server here;
discovered tools are handed in as the discoverer would return them)."""

from __future__ import annotations

from typing import Any

import pytest

from planboard import selectors, services
from planboard.exceptions import Forbidden, PlanError
from planboard.models import AgentRun, ChatSession, Message, ToolCall, Toolset, ToolsetTool
from tests.support.env import DISPATCHED

pytestmark = pytest.mark.django_db

LISTED = [
    {"name": "search", "description": "Find things", "input_schema": {"type": "object"},
     "read_only": True},
    {"name": "write_file", "description": "Write", "input_schema": {"type": "object"},
     "read_only": False},
]  # fmt: skip


@pytest.fixture
def http_toolset(staff: Any) -> Toolset:
    return services.toolset_create(
        user=staff,
        name="files",
        kind="http",
        url="https://tools.example.com/mcp",
        headers={"Authorization": "Bearer s3cret"},
    )


def tools_of(toolset: Toolset) -> dict[str, ToolsetTool]:
    return {t.name: t for t in ToolsetTool.objects.filter(toolset=toolset)}


# --- configuring toolsets ---------------------------------------------------------------------


def test_only_people_allowed_to_run_programs_set_them_up(
    user: Any, staff: Any, staff_admin: Any, superuser: Any
) -> None:
    fields = {"name": "shell", "kind": "stdio", "command": "/usr/bin/env", "args": ["true"]}
    # Members, bare staff and admins with every other permission: refused.
    for person in (user, staff, staff_admin, None):
        with pytest.raises(Forbidden, match="run_stdio_toolset"):
            services.toolset_create(user=person, **fields)
    assert not Toolset.objects.filter(name="shell").exists()
    assert services.toolset_create(user=superuser, **fields).kind == "stdio"
    # A person may add an http endpoint, but never turn it into a program.
    http = services.toolset_create(user=user, name="web", kind="http", url="http://x.test/mcp")
    with pytest.raises(Forbidden):
        services.toolset_update(toolset_id=http.pk, user=user, kind="stdio", command="sh")
    assert Toolset.objects.get(pk=http.pk).kind == "http"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "x", "kind": "http", "url": "ftp://x.test/mcp"}, "http(s) URL"),
        ({"name": "x", "kind": "http", "url": "javascript:alert(1)"}, "http(s) URL"),
        ({"name": "x", "kind": "http"}, "needs the 'url'"),
        ({"name": "x", "kind": "stdio"}, "needs the 'command'"),
        ({"name": "a__b", "kind": "http", "url": "http://x.test"}, "single '_'"),
        ({"name": "Bad Name", "kind": "http", "url": "http://x.test"}, "lowercase"),
        ({"name": "x", "kind": "ftp"}, "'kind' must be"),
        ({"name": "x", "kind": "stdio", "command": "a", "args": "ls"}, "list of strings"),
        ({"name": "x", "kind": "stdio", "command": "a", "env": {"1X": "v"}}, "not allowed"),
        (
            {"name": "x", "kind": "http", "url": "http://x.test", "headers": {"X": "a\nb"}},
            "one line",
        ),
    ],
)
def test_bad_toolsets_are_refused_clearly(staff: Any, fields: dict[str, Any], message: str) -> None:
    with pytest.raises(PlanError, match=message.replace("(", r"\(").replace(")", r"\)")):
        services.toolset_create(user=staff, **fields)
    assert not Toolset.objects.exclude(kind=Toolset.Kind.BUILTIN).exists()


def test_secrets_merge_on_update_and_names_never_change(staff: Any, http_toolset: Toolset) -> None:
    services.toolset_update(
        toolset_id=http_toolset.pk,
        user=staff,
        headers={"X-Team": "blue", "Authorization": None},
    )
    assert Toolset.objects.get(pk=http_toolset.pk).headers == {"X-Team": "blue"}
    services.toolset_update(toolset_id=http_toolset.pk, user=staff, headers={"X-Other": "1"})
    assert Toolset.objects.get(pk=http_toolset.pk).headers == {"X-Team": "blue", "X-Other": "1"}
    with pytest.raises(PlanError, match="cannot change"):
        services.toolset_update(toolset_id=http_toolset.pk, user=staff, name="other")
    with pytest.raises(PlanError, match="exists already"):
        services.toolset_create(user=staff, name="files", kind="http", url="http://y.test")


# --- discovered tools -------------------------------------------------------------------------


def test_refresh_derives_policies_and_keeps_staff_overrides(
    staff: Any, http_toolset: Toolset
) -> None:
    result = services.toolset_refresh_tools(toolset_id=http_toolset.pk, tools=LISTED)
    assert sorted(result.added) == ["search", "write_file"]
    tools = tools_of(http_toolset)
    assert (tools["search"].policy, tools["write_file"].policy) == ("auto", "ask")
    toolset = Toolset.objects.get(pk=http_toolset.pk)
    # The listing as taken: each tool cleaned, and offered (no reason it is not).
    assert toolset.refreshed_at is not None
    assert toolset.tools_cache == [{**tool, "unsupported": ""} for tool in LISTED]

    services.toolset_update(
        toolset_id=http_toolset.pk, user=staff, tool_policies={"search": "never"}
    )
    # The server now calls search a writer and stops listing write_file.
    relisted = [{**LISTED[0], "read_only": False, "description": "Find more"}]
    result = services.toolset_refresh_tools(toolset_id=http_toolset.pk, tools=relisted)
    assert result.removed == ["write_file"]
    tools = tools_of(http_toolset)
    assert tools["search"].policy == "never" and tools["search"].policy_overridden
    assert tools["search"].description == "Find more" and not tools["search"].read_only
    assert not tools["write_file"].available
    # Back again: its default policy, and a reset override follows the hint once more.
    services.toolset_refresh_tools(toolset_id=http_toolset.pk, tools=LISTED)
    services.toolset_update(toolset_id=http_toolset.pk, user=staff, tool_policies={"search": None})
    tools = tools_of(http_toolset)
    assert tools["write_file"].available and tools["write_file"].policy == "ask"
    assert tools["search"].policy == "auto" and not tools["search"].policy_overridden
    with pytest.raises(PlanError, match="no tool named 'ghost'"):
        services.toolset_update(
            toolset_id=http_toolset.pk, user=staff, tool_policies={"ghost": "ask"}
        )


def test_refresh_skips_tools_no_model_could_call(http_toolset: Toolset) -> None:
    listed = [
        {"name": "ok_tool", "input_schema": {"type": "object"}},
        {"name": "has.dot", "input_schema": {"type": "object"}},
        {"name": "x" * 80, "input_schema": {"type": "object"}},
        {"name": "no_schema", "input_schema": "nonsense"},
    ]
    result = services.toolset_refresh_tools(toolset_id=http_toolset.pk, tools=listed)
    assert sorted(result.skipped) == sorted(["has.dot", "x" * 80])
    tools = tools_of(http_toolset)
    assert sorted(tools) == ["no_schema", "ok_tool"]
    assert tools["no_schema"].input_schema == {"type": "object", "properties": {}}
    assert tools["ok_tool"].policy == "ask"  # no read-only hint: it may change things


# --- sessions ---------------------------------------------------------------------------------


def test_owner_enables_usable_toolsets_others_cannot(
    user: Any, other_user: Any, lead: Any, staff: Any, chat_session: ChatSession,
    http_toolset: Toolset,
) -> None:  # fmt: skip
    services.toolset_refresh_tools(toolset_id=http_toolset.pk, tools=LISTED)
    off = services.toolset_create(
        user=staff, name="off", kind="http", url="http://off.test", enabled=False
    )
    assert services.session_set_toolsets(
        session_id=chat_session.pk, toolset_ids=[http_toolset.pk], user=user
    ) == [http_toolset.pk]
    for outsider in (other_user, lead):
        with pytest.raises(Forbidden):
            services.session_set_toolsets(session_id=chat_session.pk, toolset_ids=[], user=outsider)
    with pytest.raises(PlanError, match=str(off.pk)):
        services.session_set_toolsets(
            session_id=chat_session.pk, toolset_ids=[http_toolset.pk, off.pk], user=user
        )
    assert selectors.session_toolset_ids(session_id=chat_session.pk) == [http_toolset.pk]
    offered = selectors.session_tools(session_id=chat_session.pk)
    assert [t.name for t in offered] == ["search", "write_file"]
    # A disabled toolset stops being offered at once, without touching sessions.
    services.toolset_update(toolset_id=http_toolset.pk, user=staff, enabled=False)
    assert selectors.session_tools(session_id=chat_session.pk) == []
    services.session_update(session_id=chat_session.pk, toolsets=[])
    assert selectors.session_toolset_ids(session_id=chat_session.pk) == []


# --- tool-call records ------------------------------------------------------------------------


@pytest.fixture
def waiting_run(chat_session: ChatSession, user: Any, http_toolset: Toolset) -> AgentRun:
    """A run paused on two pending calls of `files__write_file` and one of another tool."""
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    services.run_start(run_id=run.pk, worker="w")
    for call_id, tool in (("c1", "write_file"), ("c2", "write_file"), ("c3", "delete")):
        services.tool_call_open(
            session_id=chat_session.pk,
            run_id=run.pk,
            tool_call_id=call_id,
            tool_name=f"files__{tool}",
            toolset_id=http_toolset.pk,
            tool=tool,
            arguments={"path": "a.txt"},
            read_only=False,
            status=ToolCall.Status.PENDING,
        )
    paused = services.run_pause_for_approval(run_id=run.pk)
    assert paused.status == AgentRun.Status.WAITING_FOR_APPROVAL
    assert paused.pause_reason == AgentRun.PAUSE_APPROVAL and paused.finished_at is None
    return paused


def status_of(session: ChatSession, call_id: str) -> str:
    return ToolCall.objects.get(session=session, tool_call_id=call_id).status


def test_decisions_one_by_one_then_the_run_is_queued_again(
    user: Any, chat_session: ChatSession, waiting_run: AgentRun, django_capture_on_commit_callbacks
) -> None:
    DISPATCHED.clear()
    record = services.tool_call_decide(
        session_id=chat_session.pk, tool_call_id="c1", user=user, decision="deny", note="No."
    )
    assert (record.status, record.note, record.decided_by_id) == ("denied", "No.", user.pk)
    waiting_run.refresh_from_db()
    assert waiting_run.status == AgentRun.Status.WAITING_FOR_APPROVAL  # two still wait
    services.tool_call_decide(
        session_id=chat_session.pk, tool_call_id="c2", user=user, decision="approve"
    )
    assert AgentRun.objects.get(pk=waiting_run.pk).status == AgentRun.Status.WAITING_FOR_APPROVAL
    with django_capture_on_commit_callbacks(execute=True):
        services.tool_call_decide(
            session_id=chat_session.pk, tool_call_id="c3", user=user, decision="approve"
        )
    waiting_run.refresh_from_db()
    assert waiting_run.status == AgentRun.Status.QUEUED and waiting_run.pause_reason == ""
    assert waiting_run.pk in DISPATCHED
    with pytest.raises(PlanError, match="no longer waiting"):
        services.tool_call_decide(
            session_id=chat_session.pk, tool_call_id="c3", user=user, decision="deny"
        )
    with pytest.raises(PlanError) as missing:
        services.tool_call_decide(
            session_id=chat_session.pk, tool_call_id="nope", user=user, decision="deny"
        )
    assert missing.value.code == "not_found"


def test_always_allow_approves_waiting_calls_of_that_tool(
    user: Any, chat_session: ChatSession, waiting_run: AgentRun, http_toolset: Toolset
) -> None:
    services.tool_call_decide(
        session_id=chat_session.pk,
        tool_call_id="c1",
        user=user,
        decision="approve",
        always_allow=True,
    )
    assert status_of(chat_session, "c2") == "approved"  # the same tool
    assert status_of(chat_session, "c3") == "pending"  # another tool still asks
    assert selectors.tool_always_allowed(
        session_id=chat_session.pk, toolset_id=http_toolset.pk, tool="write_file"
    )
    assert not selectors.tool_always_allowed(
        session_id=chat_session.pk, toolset_id=http_toolset.pk, tool="delete"
    )
    with pytest.raises(PlanError, match="with 'approve' only"):
        services.tool_call_decide(
            session_id=chat_session.pk,
            tool_call_id="c3",
            user=user,
            decision="deny",
            always_allow=True,
        )


def test_only_the_owner_or_staff_decide(
    user: Any, other_user: Any, lead: Any, staff: Any, staff_admin: Any,
    chat_session: ChatSession, waiting_run: AgentRun,
) -> None:  # fmt: skip
    for outsider in (lead, other_user, staff):
        with pytest.raises(Forbidden):
            services.tool_call_decide(
                session_id=chat_session.pk, tool_call_id="c1", user=outsider, decision="approve"
            )
    assert status_of(chat_session, "c1") == "pending"
    record = services.tool_call_decide(
        session_id=chat_session.pk, tool_call_id="c1", user=staff_admin, decision="approve"
    )
    assert record.decided_by_id == staff_admin.pk


def test_writing_instead_of_deciding_denies_and_resumes(
    user: Any, chat_session: ChatSession, waiting_run: AgentRun
) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Stop that")
    assert run.pk == waiting_run.pk and run.status == AgentRun.Status.QUEUED
    records = ToolCall.objects.filter(run=waiting_run)
    assert {r.status for r in records} == {"denied"}
    assert all("wrote a message" in r.note for r in records)


def test_stopping_a_waiting_run_denies_its_calls(
    chat_session: ChatSession, waiting_run: AgentRun
) -> None:
    run = services.run_cancel(session_id=chat_session.pk)
    assert run is not None and run.status == AgentRun.Status.CANCELLED
    assert {r.status for r in ToolCall.objects.filter(run=waiting_run)} == {"denied"}


def test_a_decision_before_the_pause_keeps_the_run_going(
    user: Any, chat_session: ChatSession, http_toolset: Toolset
) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    services.run_start(run_id=run.pk, worker="w")
    services.tool_call_open(
        session_id=chat_session.pk, run_id=run.pk, tool_call_id="c1", tool_name="files__w",
        toolset_id=http_toolset.pk, tool="w", arguments={}, read_only=False, status="pending",
    )  # fmt: skip
    services.tool_call_decide(
        session_id=chat_session.pk, tool_call_id="c1", user=user, decision="approve"
    )
    assert services.run_pause_for_approval(run_id=run.pk).status == AgentRun.Status.RUNNING


def test_a_call_runs_once_and_is_answered_once(
    user: Any, chat_session: ChatSession, http_toolset: Toolset
) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    record = services.tool_call_open(
        session_id=chat_session.pk, run_id=run.pk, tool_call_id="c1", tool_name="files__w",
        toolset_id=http_toolset.pk, tool="w", arguments={"a": "x\x00y"}, read_only=False,
        status="approved",
    )  # fmt: skip
    assert record.arguments == {"a": "xy"}
    again = services.tool_call_open(
        session_id=chat_session.pk, run_id=run.pk, tool_call_id="c1", tool_name="files__w",
        toolset_id=http_toolset.pk, tool="w", arguments={}, read_only=False, status="pending",
    )  # fmt: skip
    assert again.pk == record.pk and again.status == "approved"
    assert services.tool_call_claim(record_id=record.pk) is not None
    assert services.tool_call_claim(record_id=record.pk) is None  # someone else has it
    # Found running after a crash: a call that may have changed things is never repeated.
    assert services.tool_call_claim(record_id=record.pk, retry=True) is None
    services.tool_call_answer(record_id=record.pk, content="ok", status="succeeded", duration_ms=5)
    with pytest.raises(PlanError) as twice:
        services.tool_call_answer(record_id=record.pk, content="again", status="failed")
    assert twice.value.code == "duplicate_tool_call"
    record.refresh_from_db()
    assert (record.status, record.duration_ms) == ("succeeded", 5)
    assert record.finished_at is not None
    assert Message.objects.get(tool_call_id="c1").content == "ok"


def test_a_read_only_call_found_running_may_be_retried(
    user: Any, chat_session: ChatSession, http_toolset: Toolset
) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    record = services.tool_call_open(
        session_id=chat_session.pk, run_id=run.pk, tool_call_id="c1", tool_name="files__s",
        toolset_id=http_toolset.pk, tool="s", arguments={}, read_only=True, status="approved",
    )  # fmt: skip
    assert services.tool_call_claim(record_id=record.pk) is not None
    assert services.tool_call_claim(record_id=record.pk, retry=True) is not None


def test_calls_and_decisions_are_broadcast_to_the_session(
    user: Any, chat_session: ChatSession, waiting_run: AgentRun, events: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        services.tool_call_decide(
            session_id=chat_session.pk, tool_call_id="c1", user=user, decision="deny", note="n"
        )
    sent = [e for g, e in events.items if g == f"session.{chat_session.pk}"]
    calls = [e["tool_call"] for e in sent if e["type"] == "session.tool_call"]
    assert [(c["tool_call_id"], c["status"], c["note"]) for c in calls] == [("c1", "denied", "n")]
