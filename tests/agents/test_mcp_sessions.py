"""Live MCP sessions (agents/mcp/sessions.py) against the test server as a real stdio child:
one server process per conversation and toolset, kept across calls, approval waits and runs;
closed when idle, past the cap, when the toolset is disabled or changed; always reaped; and
a result that says so when the server's state was lost."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import pytest

from agents import tasks
from agents.mcp import sessions
from agents.mcp.live import STDERR_KEEP_BYTES
from agents.mcp.sessions import Conversation
from agents.runtime.host import RunHost
from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Toolset, ToolsetTool
from tests.support.mcp_servers import HttpServer, http_toolset, stdio_toolset
from tests.support.runs import HostLoop, drive, post, record, result_of
from tests.support.scripted import ScriptedModel, call, say, tool_calls

TOTAL = re.compile(r"^total (\d+) in pid (\d+)")


def counted(text: str) -> tuple[int, int]:
    """(the counter's total, the server's PID) from a `counter_add` result."""
    found = TOTAL.match(text)
    assert found, text
    return int(found.group(1)), int(found.group(2))


def gone(pid: int) -> bool:
    """The process has exited and been reaped (a zombie still has its /proc entry)."""
    return not Path(f"/proc/{pid}").exists()


@pytest.fixture
def counting(superuser: Any, session: ChatSession) -> Toolset:
    toolset = stdio_toolset(superuser, name="counting")
    services.toolset_update(toolset_id=toolset.pk, user=None, tool_policies={"counter_add": "auto"})
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk])
    return toolset


def add(host: HostLoop, toolset: Toolset, chat: int) -> tuple[int, int, str]:
    """`counter_add` straight through the loop's pool for chat session `chat`."""
    output = host.run(
        sessions.acall_tool(toolset, "counter_add", {"n": 1}, conversation=Conversation(chat))
    )
    assert output.ok, output.text
    return (*counted(output.text), output.text)


# --- the acceptance test ----------------------------------------------------------------------


def test_a_conversation_keeps_one_server_across_calls_approval_and_runs(
    session: ChatSession, user: Any, counting: Toolset, scripted_model: ScriptedModel
) -> None:
    scripted_model.script.extend(
        [
            tool_calls(call("counting__counter_add", call_id="a1", n=1)),
            tool_calls(call("counting__write_note", call_id="w", text="hello")),  # asks
            tool_calls(call("counting__counter_add", call_id="a2", n=1)),
            say("Counted twice."),
            tool_calls(call("counting__counter_add", call_id="a3", n=1)),
            say("Three."),
        ]
    )
    with HostLoop() as host:
        first = host.drive(post(session, user))
        assert first.status == AgentRun.Status.WAITING_FOR_APPROVAL
        services.tool_call_decide(
            session_id=session.pk, tool_call_id="w", user=user, decision="approve"
        )
        assert host.drive(AgentRun.objects.get(pk=first.pk)).status == "succeeded"
        assert host.drive(post(session, user, "Once more")).status == "succeeded"

        totals = [counted(result_of(session, c)) for c in ("a1", "a2", "a3")]
        # One process saw every call: its state went on across the wait and into run two.
        assert [t for t, _ in totals] == [1, 2, 3]
        assert len({pid for _, pid in totals}) == 1
        assert "[Planboard" not in result_of(session, "a3")
        assert record(session, "w").status == "succeeded"

        # Another conversation gets a server of its own.
        other = services.session_create(owner=user, need_user_confirm=False)
        services.session_set_toolsets(session_id=other.pk, toolset_ids=[counting.pk])
        scripted_model.script.extend(
            [tool_calls(call("counting__counter_add", call_id="b1", n=1)), say("One.")]
        )
        assert host.drive(post(other, user)).status == "succeeded"
        total, pid = counted(result_of(other, "b1"))
        assert total == 1 and pid != totals[0][1]
        pids = [totals[0][1], pid]
    # The loop's end (a host's shutdown) stops and reaps both servers.
    assert all(gone(p) for p in pids)


def test_a_run_on_a_loop_of_its_own_says_its_server_was_started_afresh(
    session: ChatSession, user: Any, counting: Toolset, scripted_model: ScriptedModel
) -> None:
    scripted_model.script.extend(
        [
            tool_calls(call("counting__counter_add", call_id="a1", n=1)),
            say("One."),
            tool_calls(call("counting__counter_add", call_id="a2", n=1)),
            say("One again."),
        ]
    )
    assert drive(post(session, user)).status == "succeeded"  # `execute_run`: its own loop
    total, first_pid = counted(result_of(session, "a1"))
    assert total == 1 and "[Planboard" not in result_of(session, "a1")
    assert gone(first_pid)  # closed with the run's loop
    assert drive(post(session, user, "Again")).status == "succeeded"
    text = result_of(session, "a2")
    assert counted(text)[0] == 1
    assert text.endswith("\n\n" + sessions.lost_note("counting", sessions.ELSEWHERE))


# --- lifetime ---------------------------------------------------------------------------------


def test_an_idle_session_is_closed_and_its_server_reaped(counting: Toolset, settings: Any) -> None:
    settings.PLANBOARD_MCP_SESSION_IDLE_SECONDS = 600
    now = [1000.0]
    with HostLoop() as host:
        pool = host.pool()
        pool.clock = lambda: now[0]
        _, pid, _ = add(host, counting, 1)
        now[0] += 599
        assert pool.reap_idle() == 0
        assert add(host, counting, 1)[:2] == (2, pid)  # used again: idle from now
        now[0] += 600
        assert pool.reap_idle() == 1
        host.run(pool.settled())
        assert gone(pid)
        total, new_pid, text = add(host, counting, 1)
        assert total == 1 and new_pid != pid
        assert text.endswith(sessions.lost_note("counting", "it was unused for 600 seconds"))


def test_past_the_cap_the_least_recently_used_session_is_closed(
    counting: Toolset, settings: Any
) -> None:
    settings.PLANBOARD_MCP_SESSIONS_PER_HOST = 2
    with HostLoop() as host:
        pool = host.pool()
        pid1 = add(host, counting, 1)[1]
        pid2 = add(host, counting, 2)[1]
        add(host, counting, 1)  # chat 1 used last: chat 2 is now the least recent
        pid3 = add(host, counting, 3)[1]
        host.run(pool.settled())
        assert gone(pid2) and not gone(pid1) and not gone(pid3)
        assert sorted(key[0] for key in pool.live) == [1, 3]
        assert add(host, counting, 1)[:2] == (3, pid1)
        total, _, text = add(host, counting, 2)
        assert total == 1 and "to make room" in text


def test_more_conversations_starting_at_once_than_the_cap_all_get_their_call(
    counting: Toolset, settings: Any
) -> None:
    """A session still opening is not closed to make room: its call is waiting for it."""
    settings.PLANBOARD_MCP_SESSIONS_PER_HOST = 2

    async def at_once() -> list[Any]:
        return await asyncio.gather(
            *(
                sessions.acall_tool(
                    counting, "counter_add", {"n": 1}, conversation=Conversation(chat)
                )
                for chat in range(1, 6)
            )
        )

    with HostLoop() as host:
        pool = host.pool()
        outputs = host.run(at_once())
        assert all(o.ok for o in outputs), [o.text for o in outputs]
        assert [counted(o.text)[0] for o in outputs] == [1] * 5
        host.run(pool.settled())
        # The cap holds again once they are idle: a new conversation makes room.
        add(host, counting, 6)
        host.run(pool.settled())
        assert len([v for v in pool.live.values() if not v.ended]) <= 2


def test_a_disabled_toolset_or_a_deleted_conversation_closes_its_sessions(
    session: ChatSession, user: Any, superuser: Any, counting: Toolset
) -> None:
    other = services.session_create(owner=user)
    services.session_set_toolsets(session_id=other.pk, toolset_ids=[counting.pk])
    with HostLoop() as host:
        pool = host.pool()
        pid = add(host, counting, session.pk)[1]
        other_pid = add(host, counting, other.pk)[1]

        def sweep() -> int:
            wanted = selectors.tool_sessions_wanted(
                pairs=sorted(v.pair for v in pool.live.values())
            )

            async def answer(pairs: list[tuple[int, int]]) -> set[tuple[int, int]]:
                return wanted

            closed = host.run(pool.sweep(answer))
            host.run(pool.settled())
            return closed

        assert sweep() == 0
        ChatSession.objects.filter(pk=other.pk).delete()  # as staff do in the admin
        assert sweep() == 1 and gone(other_pid) and not gone(pid)
        services.toolset_update(toolset_id=counting.pk, user=superuser, enabled=False)
        assert sweep() == 1 and gone(pid)
        assert not pool.live


def test_changed_settings_start_a_new_server_and_say_so(superuser: Any, counting: Toolset) -> None:
    with HostLoop() as host:
        pid = add(host, counting, 1)[1]
        services.toolset_update(toolset_id=counting.pk, user=superuser, env={"EXTRA": "1"})
        changed = Toolset.objects.get(pk=counting.pk)
        total, new_pid, text = add(host, changed, 1)
        assert total == 1 and new_pid != pid
        assert "the toolset's settings changed" in text
        host.run(host.pool().settled())
        assert gone(pid)


def test_a_crashed_server_is_started_again_at_the_next_call(counting: Toolset) -> None:
    with HostLoop() as host:
        pid = add(host, counting, 1)[1]
        crashed = host.run(sessions.acall_tool(counting, "crash", {}, conversation=Conversation(1)))
        assert not crashed.ok and "stopped unexpectedly" in crashed.text
        total, new_pid, text = add(host, counting, 1)
        assert total == 1 and new_pid != pid and gone(pid)
        assert text.endswith(
            "anything its server kept from earlier calls in this conversation is gone.]"
        )


def test_a_server_error_answer_keeps_the_session(counting: Toolset) -> None:
    with HostLoop() as host:
        pid = add(host, counting, 1)[1]
        for tool, arguments in (("nope", {}), ("add", {"a": "two", "b": 1}), ("fail", {})):
            output = host.run(
                sessions.acall_tool(counting, tool, arguments, conversation=Conversation(1))
            )
            assert not output.ok and output.text.startswith("Error: toolset 'counting'")
        assert add(host, counting, 1)[:2] == (2, pid)


def test_a_call_that_times_out_gives_its_session_up(counting: Toolset, settings: Any) -> None:
    with HostLoop() as host:
        pid = add(host, counting, 1)[1]
        settings.PLANBOARD_TOOL_TIMEOUT = 1
        slow = host.run(
            sessions.acall_tool(counting, "slow", {"seconds": 30}, conversation=Conversation(1))
        )
        assert not slow.ok and "did not answer within 1 seconds" in slow.text
        settings.PLANBOARD_TOOL_TIMEOUT = 60
        total, new_pid, text = add(host, counting, 1)
        assert total == 1 and new_pid != pid and "timed out" in text
        host.run(host.pool().settled())
        assert gone(pid)


def test_a_server_that_cannot_start_is_an_error_and_leaves_nothing_open(
    superuser: Any,
) -> None:
    broken = services.toolset_create(
        user=superuser, name="broken", kind="stdio", command="/nonexistent/server"
    )
    with HostLoop() as host:
        output = host.run(
            sessions.acall_tool(broken, "echo", {"text": "x"}, conversation=Conversation(1))
        )
        assert not output.ok and "could not start its server" in output.text
        assert "[Planboard" not in output.text
        assert not host.pool().live


# --- tools/list_changed -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_servers_tools_changed_notice_refreshes_the_toolset_without_lowering_caution(
    superuser: Any, tmp_path: Path
) -> None:
    toolset = stdio_toolset(superuser, name="growing", env={"TOOLS_FILE": str(tmp_path / "t")})
    write_note = ToolsetTool.objects.get(toolset=toolset, name="write_note")
    assert (write_note.policy, write_note.read_only) == ("ask", False)
    with HostLoop() as host:
        for line in ("extra:shiny", "relabel"):
            output = host.run(
                sessions.acall_tool(toolset, "grow", {"line": line}, conversation=Conversation(1))
            )
            assert output.ok, output.text
            host.run(host.pool().settled())  # the refresh the notice started
    tools = {t.name: t for t in ToolsetTool.objects.filter(toolset=toolset)}
    assert "shiny" in tools  # listed without anyone pressing refresh
    # The server now calls write_note read-only: it still asks, and staff are told to look.
    relabelled = tools["write_note"]
    assert relabelled.read_only is True
    assert relabelled.policy == "ask" and relabelled.needs_review


@pytest.mark.django_db(transaction=True)
def test_a_server_that_serves_no_listen_stream_is_still_used_without_notices(
    superuser: Any, tmp_path: Path
) -> None:
    env = {"TOOLS_FILE": str(tmp_path / "t"), "NO_LISTEN": "1"}
    toolset = stdio_toolset(superuser, name="deaf", env=env)
    with HostLoop() as host:
        grown = host.run(
            sessions.acall_tool(
                toolset, "grow", {"line": "extra:shiny"}, conversation=Conversation(1)
            )
        )
        assert grown.ok, grown.text
        host.run(host.pool().settled())
        counted = [
            host.run(sessions.acall_tool(toolset, "counter_add", {}, conversation=Conversation(1)))
            for _ in range(2)
        ]
    assert counted[0].text.startswith("total 1 in pid ")
    assert counted[1].text == counted[0].text.replace("total 1", "total 2")  # one live session
    assert not ToolsetTool.objects.filter(toolset=toolset, name="shiny").exists()  # none heard


def test_a_notice_whose_listing_did_not_change_refreshes_nothing(
    superuser: Any, tmp_path: Path
) -> None:
    toolset = stdio_toolset(superuser, name="growing", env={"TOOLS_FILE": str(tmp_path / "t")})
    refreshed: list[int] = []

    async def count(toolset_id: int) -> None:
        refreshed.append(toolset_id)

    with HostLoop() as host:
        pool = host.pool()
        pool.notices.refresher = count
        for line in ("extra:one", "noop", "noop", "extra:two"):
            output = host.run(
                sessions.acall_tool(toolset, "grow", {"line": line}, conversation=Conversation(1))
            )
            assert output.ok, output.text
            host.run(pool.settled())
    # The first notice of this worker refreshes; after that only a listing that changed.
    assert refreshed == [toolset.pk, toolset.pk]


# --- the run host -----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_run_hosts_sweep_and_shutdown_close_its_sessions(
    superuser: Any, user: Any, settings: Any
) -> None:
    settings.PLANBOARD_RUN_DB_THREADS = 1
    session = services.session_create(owner=user, need_user_confirm=False)
    toolset = stdio_toolset(superuser, name="counting")
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk])
    kept = services.session_create(owner=user, need_user_confirm=False)
    services.session_set_toolsets(session_id=kept.pk, toolset_ids=[toolset.pk])
    host = RunHost(send_on=tasks.send_to_any_worker).start()
    try:

        def on_host(coroutine: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(coroutine, host.loop).result(60)

        def add_in(chat: int) -> int:
            conversation = Conversation(chat)
            output = on_host(
                sessions.acall_tool(toolset, "counter_add", {}, conversation=conversation)
            )
            return counted(output.text)[1]

        pid, kept_pid = add_in(session.pk), add_in(kept.pk)
        pool = sessions.pool_of(host.loop)
        assert pool is not None
        on_host(host._sweep_tool_sessions())
        assert len(pool.live) == 2  # both still wanted
        services.session_set_toolsets(session_id=session.pk, toolset_ids=[], user=user)
        on_host(host._sweep_tool_sessions())
        on_host(pool.settled())
        assert gone(pid) and not gone(kept_pid)
    finally:
        host.stop(timeout=10)
    assert gone(kept_pid)  # the host's shutdown closed the rest
    assert sessions.pool_of(host.loop) is None


def test_a_live_servers_stderr_is_trimmed_and_a_crash_still_quoted(counting: Toolset) -> None:
    with HostLoop() as host:
        pool = host.pool()

        def call(tool: str, **arguments: Any) -> Any:
            return host.run(
                sessions.acall_tool(counting, tool, arguments, conversation=Conversation(1))
            )

        assert call("shout", size=STDERR_KEEP_BYTES // 2).ok
        (live,) = pool.live.values()
        assert live.errlog is not None
        assert os.fstat(live.errlog.fileno()).st_size > STDERR_KEEP_BYTES // 2
        assert call("shout", size=STDERR_KEEP_BYTES).ok
        assert os.fstat(live.errlog.fileno()).st_size == 0  # emptied after the call
        assert call("shout", size=10).ok
        # The server writes at the file's new end, not at its old offset (no hole).
        assert 0 < os.fstat(live.errlog.fileno()).st_size < 1000
        crashed = call("crash")
        # Written after the file was emptied, at its (new) end: quoted as before.
        assert not crashed.ok and crashed.text.endswith("/ about to crash")


def test_an_http_toolsets_calls_share_one_mcp_session_per_conversation(
    staff: Any, mcp_http: HttpServer
) -> None:
    remote = http_toolset(staff, mcp_http)
    with HostLoop() as host:
        start = len(mcp_http.seen_sessions)

        def echo(chat: int, text: str) -> str:
            output = host.run(
                sessions.acall_tool(remote, "echo", {"text": text}, conversation=Conversation(chat))
            )
            assert output.ok, output.text
            return output.text

        assert [echo(1, t) for t in ("a", "b", "c")] == ["a", "b", "c"]
        first = {s for s in mcp_http.seen_sessions[start:] if s}
        assert len(first) == 1  # one initialize, then every call in that session
        middle = len(mcp_http.seen_sessions)
        assert echo(2, "d") == "d"
        second = {s for s in mcp_http.seen_sessions[middle:] if s}
        assert len(second) == 1 and second != first  # another conversation, another session


def test_a_session_the_http_server_forgot_is_replaced_and_the_call_made_there(
    staff: Any, mcp_http: HttpServer
) -> None:
    remote = http_toolset(staff, mcp_http)
    start = len(mcp_http.seen_sessions)  # the refresh had a session of its own
    with HostLoop() as host:

        def echo(text: str) -> Any:
            return host.run(
                sessions.acall_tool(remote, "echo", {"text": text}, conversation=Conversation(1))
            )

        assert echo("before").text == "before"
        (old,) = {s for s in mcp_http.seen_sessions[start:] if s}
        mcp_http.forgotten.add(old)  # the server restarted
        again = echo("after")
        assert again.ok and again.text == "after\n\n" + sessions.lost_note(
            "remote", "the server no longer knew its session"
        )
        assert len({s for s in mcp_http.seen_sessions[start:] if s} - {old}) == 1
        assert echo("later").text == "later"  # the new session, no note
