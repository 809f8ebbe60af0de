"""Planboard speaks the newest MCP revision a server speaks, against the SDK's real servers:
a 2026-07-28-only one, a dual one and a handshake-only one (tests/support/mcp_revisions.py),
each restarted in the middle of a conversation, whose next call must still succeed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents.mcp import calls, listing, sessions
from agents.mcp.sessions import Conversation
from planboard.models import Toolset
from tests.support.mcp_revisions import MODERN, RevisionServer, revision_toolset
from tests.support.runs import HostLoop

HANDSHAKE = "2025-11-25"


@pytest.fixture(params=["modern", "dual"])
def stateless_server(request: pytest.FixtureRequest) -> Iterator[RevisionServer]:
    with RevisionServer(request.param) as server:
        yield server


def echo(host: HostLoop, toolset: Toolset, text: str, chat: int = 1) -> Any:
    return host.run(
        sessions.acall_tool(toolset, "echo", {"text": text}, conversation=Conversation(chat))
    )


def test_a_server_speaking_2026_is_spoken_to_in_2026_and_survives_a_restart(
    staff: Any, stateless_server: RevisionServer
) -> None:
    server = stateless_server
    remote = revision_toolset(staff, server)  # the refresh lists over the new revision
    assert "echo" in {tool.name for tool in remote.tools.all()}
    assert server.versions_of("initialize") == []
    assert set(server.versions_of("tools/list")) == {MODERN}
    with HostLoop() as host:
        assert echo(host, remote, "before").text == "before"
        asked = len(server.versions_of("server/discover"))
        server.restart()
        after = echo(host, remote, "after")
        assert after.ok and after.text == "after"  # no session to lose: no note either
        assert echo(host, remote, "later").text == "later"
        # The revision is remembered, not asked again for every call.
        assert len(server.versions_of("server/discover")) == asked
        pool = host.pool()
        assert not pool.live  # a stateless server needs no live session
        assert pool.stateless[sessions.fingerprint_of(remote)].version == MODERN
    assert server.versions_of("initialize") == []
    assert set(server.versions_of("tools/call")) == {MODERN}


def test_a_handshake_only_server_keeps_its_session_and_a_restart_reopens_it(
    staff: Any,
) -> None:
    with RevisionServer("handshake") as server:
        remote = revision_toolset(staff, server)
        with HostLoop() as host:
            assert echo(host, remote, "before").text == "before"
            opened = len(server.versions_of("initialize"))
            server.restart()  # the old session id now answers 404 "Session not found"
            again = echo(host, remote, "after")
            assert again.ok, again.text
            assert again.text == "after\n\n" + sessions.lost_note(
                "remote", "the server no longer knew its session"
            )
            assert len(server.versions_of("initialize")) == opened + 1  # a new session
            assert echo(host, remote, "later").text == "later"
            assert len(host.pool().live) == 1 and not host.pool().stateless
        assert server.versions_of("initialize")
        calls_made = server.versions_of("tools/call")
        # Stamped with the handshake's revision, never a 2026 one.
        assert calls_made and MODERN not in calls_made and HANDSHAKE in calls_made


def test_a_connection_of_its_own_negotiates_the_same_way(staff: Any) -> None:
    with RevisionServer("modern") as modern, RevisionServer("handshake") as old:
        for server, spoken in ((modern, MODERN), (old, HANDSHAKE)):
            toolset = revision_toolset(staff, server, name=f"t{server.port}")
            assert calls.call_tool(toolset, "echo", {"text": "hi"}).text == "hi"
            assert "echo" in {tool["name"] for tool in listing.discover_tools(toolset)}
            assert spoken in server.versions_of("tools/call")


@pytest.mark.django_db(transaction=True)
def test_a_handshake_only_servers_change_notice_still_arrives_unasked(
    staff: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No listen stream before 2026-07-28: the session hears the notice as it always did.
    monkeypatch.setenv("TOOLS_FILE", str(tmp_path / "tools"))
    with RevisionServer("handshake") as server:
        remote = revision_toolset(staff, server)
        with HostLoop() as host:
            grown = host.run(
                sessions.acall_tool(
                    remote, "grow", {"line": "extra:shiny"}, conversation=Conversation(1)
                )
            )
            assert grown.ok, grown.text
            host.run(host.pool().settled())  # the refresh the notice started
        assert not server.versions_of("subscriptions/listen")
    assert remote.tools.filter(name="shiny").exists()
