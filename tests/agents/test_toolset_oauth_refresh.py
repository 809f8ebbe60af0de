"""Two calls refreshing the same OAuth tokens at once: the provider rotates the refresh token,
so one refresh wins and the other is refused. Storing what a call changed replaces only the
tokens the call started from, so neither the loser's refusal nor its older tokens ever
overwrite what another call (or a new connection) stored meanwhile. Against the real
OAuth-protected MCP server of `tests.support.mcp_oauth_server`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents.mcp import calls, listing, outcome
from planboard import selectors, services
from planboard.models import ChatSession, Toolset, ToolsetCredential
from tests.support.mcp_oauth_server import OAuthServer, oauth_mcp_server
from tests.support.oauth_connect import connect, oauth_toolset

pytestmark = pytest.mark.django_db


@pytest.fixture
def oauth_server() -> Iterator[OAuthServer]:
    with oauth_mcp_server() as server:
        yield server


def as_called(toolset: Toolset, session: ChatSession) -> Toolset:
    """The toolset as a call in `session` reaches it (the owner's stored tokens on it)."""
    called = selectors.toolset_as_called(Toolset.objects.get(pk=toolset.pk), session_id=session.pk)
    assert called is not None
    return called


def store(called: Toolset, output: outcome.ToolOutput) -> None:
    """What the caller of a call does with the tokens it changed (`finish_call`)."""
    assert output.oauth_tokens is not None and output.oauth_replaces is not None
    services.toolset_oauth_tokens_store(
        toolset_id=called.pk,
        user_id=called.oauth_user_id,
        tokens=output.oauth_tokens,
        replacing=output.oauth_replaces,
    )


def stored_tokens(toolset: Toolset, user: Any) -> dict[str, Any] | None:
    if toolset.access == Toolset.Access.SHARED:
        return Toolset.objects.get(pk=toolset.pk).oauth_tokens
    credential = ToolsetCredential.objects.filter(toolset=toolset, user=user).first()
    return credential.oauth_tokens if credential is not None else None


@pytest.mark.parametrize("access", ["per_person", "shared"])
def test_a_refused_stale_refresh_stored_after_the_fresh_one_keeps_the_fresh_one(
    user: Any, staff_admin: Any, oauth_server: OAuthServer, access: str
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access=access)
    assert connect(staff_admin if access == "shared" else user, toolset, oauth_server)
    session = services.session_create(owner=user, need_user_confirm=False)
    before = stored_tokens(toolset, user)
    oauth_server.provider.expire_access_tokens()
    # Two calls start from the same stored tokens; the first to ask refreshes them.
    winner, loser = as_called(toolset, session), as_called(toolset, session)
    won = calls.call_tool(winner, "whoami", {})
    lost = calls.call_tool(loser, "whoami", {})
    assert won.ok and won.oauth_tokens and won.oauth_replaces == before
    assert not lost.ok and "Reconnect remote" in lost.text
    assert lost.oauth_tokens == {} and lost.oauth_replaces == before

    store(winner, won)
    store(loser, lost)  # the refusal was of tokens no longer stored: nothing changes
    assert stored_tokens(toolset, user) == won.oauth_tokens
    assert calls.call_tool(as_called(toolset, session), "whoami", {}).ok


def test_older_tokens_stored_last_never_replace_newer_ones(
    user: Any, staff_admin: Any, oauth_server: OAuthServer
) -> None:
    # A call refreshed the tokens but has not stored them yet; meanwhile the person connected
    # again. The call's tokens, older than the new connection, are not stored over it.
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    assert connect(user, toolset, oauth_server)
    session = services.session_create(owner=user, need_user_confirm=False)
    start = stored_tokens(toolset, user)
    oauth_server.provider.expire_access_tokens()
    slow = as_called(toolset, session)
    slow_out = calls.call_tool(slow, "whoami", {})
    assert slow_out.oauth_tokens and slow_out.oauth_replaces == start
    assert connect(user, toolset, oauth_server)
    newest = stored_tokens(toolset, user)
    assert newest not in (start, slow_out.oauth_tokens)
    store(slow, slow_out)
    assert stored_tokens(toolset, user) == newest


def test_a_refusal_stored_first_asks_to_reconnect_and_the_late_refresh_brings_nothing_back(
    user: Any, staff_admin: Any, oauth_server: OAuthServer
) -> None:
    # The other order: the refused call finishes first. The tokens it started from are the
    # stored ones and were refused, so the person is asked to connect again; the call that
    # won the refresh finds a different credential (none) and leaves it so. Never stale
    # tokens, never a credential the person did not make.
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    assert connect(user, toolset, oauth_server)
    session = services.session_create(owner=user, need_user_confirm=False)
    oauth_server.provider.expire_access_tokens()
    winner, loser = as_called(toolset, session), as_called(toolset, session)
    won = calls.call_tool(winner, "whoami", {})
    lost = calls.call_tool(loser, "whoami", {})
    store(loser, lost)
    assert stored_tokens(toolset, user) is None  # not connected: tools no longer offered
    store(winner, won)
    assert stored_tokens(toolset, user) is None


def test_tokens_refreshed_for_a_server_the_toolset_no_longer_uses_are_not_stored(
    user: Any, staff_admin: Any, oauth_server: OAuthServer
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    assert connect(user, toolset, oauth_server)
    session = services.session_create(owner=user, need_user_confirm=False)
    oauth_server.provider.expire_access_tokens()
    called = as_called(toolset, session)
    out = calls.call_tool(called, "whoami", {})
    assert out.oauth_tokens
    # Staff point the toolset elsewhere while the call runs: its tokens were cleared.
    elsewhere = oauth_server.url.replace("127.0.0.1", "localhost")
    services.toolset_update(toolset_id=toolset.pk, user=staff_admin, url=elsewhere)
    store(called, out)
    assert stored_tokens(toolset, user) == {}


def test_discovery_stores_what_it_refreshed_only_over_the_tokens_it_started_from(
    user: Any, staff_admin: Any, oauth_server: OAuthServer
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="shared")
    assert connect(staff_admin, toolset, oauth_server)
    oauth_server.provider.expire_access_tokens()
    stale = Toolset.objects.get(pk=toolset.pk)
    fresh = Toolset.objects.get(pk=toolset.pk)
    assert listing.discover_tools(fresh)  # refreshes and stores
    refreshed = stored_tokens(toolset, user)
    assert refreshed != stale.oauth_tokens
    # A second listing from the tokens read before: refused, and the refusal is not stored.
    with pytest.raises(Exception, match="Reconnect remote"):
        listing.discover_tools(stale)
    assert stored_tokens(toolset, user) == refreshed
