"""OAuth toolsets in a conversation's live MCP session (agents/mcp/signin.py): calls reuse the
session opened for the token owner, each call's requests carry the tokens it was given (so a
refreshed token is sent on the same session, never a new one), two people never share a
session or see each other's token, and a refused sign-in mid-session ends in the reconnect
message. Against the real OAuth-protected SDK server of `tests.support.mcp_oauth_server`,
speaking a handshake-era revision (its sessions have ids to compare)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings

from agents.mcp import calls, outcome, sessions
from agents.mcp.sessions import Conversation
from planboard import selectors, services
from planboard.models import ChatSession, Toolset, ToolsetCredential
from tests.support.mcp_oauth_server import (
    NEWEST_HANDSHAKE,
    NEWEST_MODERN,
    OAuthServer,
    oauth_mcp_server,
)
from tests.support.oauth_connect import connect, oauth_toolset, sign_in, start
from tests.support.runs import HostLoop
from tests.support.web import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def oauth_server() -> Iterator[OAuthServer]:
    with oauth_mcp_server(speaks="handshake") as server:
        yield server


@pytest.fixture
def toolset(user: Any, staff_admin: Any, oauth_server: OAuthServer) -> Toolset:
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    oauth_server.provider.subject = "alice@provider"
    assert connect(user, toolset, oauth_server).status_code == 302
    return toolset


def as_called(toolset: Toolset, session: ChatSession) -> Toolset:
    """The toolset as a call in `session` reaches it: its owner's tokens as stored now."""
    called = selectors.toolset_as_called(Toolset.objects.get(pk=toolset.pk), session_id=session.pk)
    assert called is not None
    return called


def whoami(host: HostLoop, called: Toolset, chat: int) -> outcome.ToolOutput:
    """A call through the loop's pool in chat session `chat`, its changed tokens stored as
    `finish_call` stores them."""
    output = host.run(sessions.acall_tool(called, "whoami", {}, conversation=Conversation(chat)))
    if output.oauth_tokens is not None:
        services.toolset_oauth_tokens_store(
            toolset_id=called.pk,
            user_id=called.oauth_user_id,
            tokens=output.oauth_tokens,
            replacing=output.oauth_replaces or {},
        )
    return output


def stored_access(toolset: Toolset, user: Any) -> str:
    credential = ToolsetCredential.objects.get(toolset=toolset, user=user)
    return str(credential.oauth_tokens["token"]["access_token"])


def test_calls_share_one_session_and_a_token_refreshed_between_them_is_sent_on_it(
    user: Any, toolset: Toolset, oauth_server: OAuthServer
) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    first_token = stored_access(toolset, user)
    with HostLoop() as host:
        first = whoami(host, as_called(toolset, session), session.pk)
        assert first.ok, first.text
        assert first.oauth_tokens is None  # nothing refreshed
        assert whoami(host, as_called(toolset, session), session.pk).ok
        assert oauth_server.openings() == 1  # one initialize for both calls
        opened = {c.session for c in oauth_server.calls()}
        assert len(opened) == 1 and None not in opened
        assert [c.token for c in oauth_server.calls()] == [first_token, first_token]

        # The token expires; a use elsewhere (a call on a connection of its own) refreshes
        # it and stores the new one. The next call on the live session sends that one.
        oauth_server.provider.expire_access_tokens()
        elsewhere = calls.call_tool(as_called(toolset, session), "whoami", {})
        assert elsewhere.ok and elsewhere.oauth_tokens
        services.toolset_oauth_tokens_store(
            toolset_id=toolset.pk,
            user_id=user.pk,
            tokens=elsewhere.oauth_tokens,
            replacing=elsewhere.oauth_replaces or {},
        )
        refreshed = stored_access(toolset, user)
        assert refreshed != first_token and oauth_server.provider.refreshed == 1
        before = len(oauth_server.seen)
        third = whoami(host, as_called(toolset, session), session.pk)
        assert third.ok, third.text
        live_calls = [s for s in oauth_server.seen[before:] if s.method == "tools/call"]
        assert [(c.token, c.session) for c in live_calls] == [(refreshed, *opened)]
        assert third.oauth_tokens is None and oauth_server.provider.refreshed == 1
        # The live session itself was never opened or negotiated again.
        assert [s.method for s in oauth_server.seen[before:] if s.method] == ["tools/call"]

        # Known to have expired (its `expires_in` ran out): the call refreshes it before
        # sending, on the same session, and hands the new tokens back to be stored; the
        # server saw only the new one.
        credential = ToolsetCredential.objects.get(toolset=toolset, user=user)
        credential.oauth_tokens = {**credential.oauth_tokens, "expires_at": 1.0}
        credential.save()
        before = len(oauth_server.seen)
        fourth = whoami(host, as_called(toolset, session), session.pk)
        assert fourth.ok, fourth.text
        assert fourth.oauth_tokens and oauth_server.provider.refreshed == 2
        newest = stored_access(toolset, user)
        assert newest not in (first_token, refreshed)
        assert (oauth_server.calls()[-1].token, oauth_server.calls()[-1].session) == (
            newest,
            *opened,
        )
        # Its next call sends the stored token as it is: no refresh, no new session.
        assert whoami(host, as_called(toolset, session), session.pk).ok
        assert oauth_server.calls()[-1].token == newest
        assert oauth_server.provider.refreshed == 2
        signed = [s for s in oauth_server.seen[before:] if s.method]
        assert [(s.method, s.session) for s in signed] == [("tools/call", *opened)] * 2
        assert [s.token for s in signed] == [newest, newest]


def test_a_token_refused_early_is_refreshed_once_and_the_call_sent_again_on_the_session(
    user: Any, toolset: Toolset, oauth_server: OAuthServer
) -> None:
    # The access token is revoked before it expires (the refresh token still works): the
    # server answers 401, the call refreshes and sends the request again; no new session.
    session = services.session_create(owner=user, need_user_confirm=False)
    with HostLoop() as host:
        assert whoami(host, as_called(toolset, session), session.pk).ok
        oauth_server.provider.access.clear()
        again = whoami(host, as_called(toolset, session), session.pk)
        assert again.ok, again.text
        assert again.oauth_tokens and oauth_server.provider.refreshed == 1
        refused, resent = oauth_server.calls()[-2:]
        assert refused.subject is None and resent.subject == "alice@provider"
        assert resent.token == stored_access(toolset, user)
        assert refused.session == resent.session and oauth_server.openings() == 1
        assert "started afresh" not in again.text


def test_two_people_in_one_conversation_never_share_a_session_or_a_token(
    user: Any, other_user: Any, toolset: Toolset, oauth_server: OAuthServer
) -> None:
    oauth_server.provider.subject = "bob@provider"
    assert connect(other_user, toolset, oauth_server).status_code == 302
    alice_session = services.session_create(owner=user, need_user_confirm=False)
    bob_session = services.session_create(owner=other_user, need_user_confirm=False)
    chat = alice_session.pk  # both calls come to the pool for the same conversation
    with HostLoop() as host:
        for owner in (alice_session, bob_session, alice_session, bob_session):
            assert whoami(host, as_called(toolset, owner), chat).ok
    subjects_by_session: dict[str | None, set[str | None]] = {}
    for seen in oauth_server.seen:
        subjects_by_session.setdefault(seen.session, set()).add(seen.subject)
    # Every request named a session of one person only (the opening ones name none yet).
    assert all(len(found) == 1 for named, found in subjects_by_session.items() if named)
    made = [c.subject for c in oauth_server.calls()]
    assert made == ["alice@provider", "bob@provider", "alice@provider", "bob@provider"]
    tokens: dict[str | None, set[str | None]] = {c.subject: set() for c in oauth_server.calls()}
    for c in oauth_server.calls():
        tokens[c.subject].add(c.token)
    assert tokens["alice@provider"] == {stored_access(toolset, user)}
    assert tokens["bob@provider"] == {stored_access(toolset, other_user)}
    sessions_of = {c.subject: c.session for c in oauth_server.calls()}
    assert sessions_of["alice@provider"] != sessions_of["bob@provider"]


def test_a_sign_in_revoked_mid_session_asks_to_reconnect_and_closes_the_session(
    user: Any, toolset: Toolset, oauth_server: OAuthServer
) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    with HostLoop() as host:
        assert whoami(host, as_called(toolset, session), session.pk).ok
        opened = oauth_server.calls()[-1].session
        oauth_server.provider.revoke_all()  # the access and the refresh token
        told = whoami(host, as_called(toolset, session), session.pk)
        where = f"{settings.PLANBOARD_PUBLIC_URL}/toolsets/{toolset.pk}/connect/"
        assert not told.ok
        assert told.text == (
            "Error: toolset 'remote': The session owner's sign-in at its provider has expired "
            f"or was revoked. Reconnect remote at {where} and try again."
        )
        assert told.oauth_tokens == {}  # stored: the person connects again
        assert not ToolsetCredential.objects.filter(toolset=toolset, user=user).exists()
        assert selectors.toolset_as_called(toolset, session_id=session.pk) is None
        assert not host.run(_holds(session.pk))  # the session was closed

        assert connect(user, toolset, oauth_server).status_code == 302
        back = whoami(host, as_called(toolset, session), session.pk)
        assert back.ok, back.text
        assert "the sign-in at its provider was refused" in back.text  # its state was lost
        assert oauth_server.calls()[-1].session != opened
        assert oauth_server.calls()[-1].token == stored_access(toolset, user)


@pytest.mark.parametrize("speaks", ["handshake", "dual"])
def test_connect_asks_the_server_as_a_call_would_at_the_revision_the_sdk_negotiates(
    user: Any, staff_admin: Any, speaks: str
) -> None:
    # The probe that gets the server's 401 is the SDK's own opening: `server/discover` at
    # the newest revision, then (a server of the handshake era refusing it) `initialize` at
    # the newest handshake revision; never a revision written down by Planboard.
    with oauth_mcp_server(speaks=speaks) as server:
        toolset = oauth_toolset(staff_admin, server, access="per_person")
        authorize = start(client_for(user), toolset)
        asked = [(s.method, s.version, s.token) for s in server.seen]
        expected = [("server/discover", NEWEST_MODERN, None)]
        if speaks == "handshake":
            expected.append(("initialize", NEWEST_HANDSHAKE, None))
        assert asked == expected
        assert "resource=" in authorize  # RFC 8707, for a revision that asks for it
        sign_in(authorize)


async def _holds(chat: int) -> bool:
    return sessions.pool().holds(chat)
