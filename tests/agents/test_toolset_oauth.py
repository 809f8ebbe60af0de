"""OAuth 2.1 for remote MCP servers: a person presses "Connect", signs in at the
server's provider and comes back; calls act with their tokens, refreshed silently when they
expire; a revoked sign-in gives the model (and the person reading the transcript) a clear
"reconnect" result, never a crash. Against a real OAuth-protected MCP server built with the
SDK's server auth support (`tests.support.mcp_oauth_server`): discovery, dynamic client
registration, PKCE and the token requests all really happen."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Toolset, ToolsetCredential
from tests.support import db
from tests.support.elicitation import answer_when_asked, rest_answer
from tests.support.mcp_oauth_server import OAuthServer, oauth_mcp_server
from tests.support.oauth_connect import connect, oauth_toolset, sign_in, start
from tests.support.runs import drive, post, result_of
from tests.support.scripted import ScriptedModel, call, say, tool_calls
from tests.support.web import api_client_for, client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def oauth_server() -> Iterator[OAuthServer]:
    with oauth_mcp_server() as server:
        yield server


@pytest.fixture
def handshake_oauth_server() -> Iterator[OAuthServer]:
    """Asking a person in the middle of a call is the handshake era's way; a 2026-07-28
    server's question parks the call instead (tests/agents/test_mcp_input_required.py)."""
    with oauth_mcp_server(speaks="handshake") as server:
        yield server


def offered(session: ChatSession) -> list[str]:
    return [tool.name for tool in selectors.session_tools(session_id=session.pk)]


def call_whoami(session: ChatSession, user: Any, model: ScriptedModel, call_id: str) -> str:
    model.script.extend([tool_calls(call("remote__whoami", call_id=call_id)), say("Done.")])
    run = drive(post(session, user, f"Who am I ({call_id})?"))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    return result_of(session, call_id)


def test_a_person_connects_calls_refreshes_silently_and_is_told_to_reconnect_when_revoked(
    user: Any, staff_admin: Any, oauth_server: OAuthServer, scripted_model: ScriptedModel
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    session = services.session_create(owner=user, need_user_confirm=False)
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk], user=user)
    assert offered(session) == []  # not connected yet

    done = connect(user, toolset, oauth_server)
    assert done.status_code == 302 and done["Location"] == "/sessions/"
    # Planboard registered itself at the provider (dynamic registration) and keeps it.
    assert len(oauth_server.provider.clients) == 1
    toolset.refresh_from_db()
    assert toolset.oauth_client["client_info"]["client_id"] in oauth_server.provider.clients
    credential = ToolsetCredential.objects.get(toolset=toolset, user=user)
    access_token = credential.oauth_tokens["token"]["access_token"]
    assert access_token in oauth_server.provider.access
    raw = db.fetch_one("SELECT oauth_tokens FROM planboard_toolsetcredential", [])
    assert raw is not None and access_token not in raw[0]  # encrypted at rest
    assert offered(session) == ["whoami"]

    assert call_whoami(session, user, scripted_model, "w1") == (
        "signed in as alice@provider; tokens issued: 1"
    )

    # The access token expires: the next call refreshes it silently, and the new one is kept.
    oauth_server.provider.expire_access_tokens()
    assert call_whoami(session, user, scripted_model, "w2").endswith("tokens issued: 2")
    assert oauth_server.provider.refreshed == 1
    credential.refresh_from_db()
    assert credential.oauth_tokens["token"]["access_token"] != access_token
    assert credential.oauth_tokens["token"]["access_token"] in oauth_server.provider.access
    # Known to have expired (its `expires_in` ran out): refreshed before the call is sent.
    credential.oauth_tokens = {**credential.oauth_tokens, "expires_at": 1.0}
    credential.save()
    assert call_whoami(session, user, scripted_model, "w2b").endswith("tokens issued: 3")
    assert oauth_server.provider.refreshed == 2

    # Revoked at the provider: the call answers with what to do, the run goes on.
    oauth_server.provider.revoke_all()
    told = call_whoami(session, user, scripted_model, "w3")
    where = f"{settings.PLANBOARD_PUBLIC_URL}/toolsets/{toolset.pk}/connect/"
    assert told.startswith("Error: toolset 'remote':"), told
    assert f"Reconnect remote at {where}" in told
    # No longer connected: the tokens are gone, the tools no longer offered until then.
    assert not ToolsetCredential.objects.filter(toolset=toolset, user=user).exists()
    assert offered(session) == []
    listed = api_client_for(user).get("/api/toolsets/").json()
    mine = next(t for t in listed if t["id"] == toolset.pk)
    assert mine["auth"] == "oauth" and mine["connected"] is False

    # Connecting again (the registration is reused) makes calls work again.
    assert connect(user, toolset, oauth_server).status_code == 302
    assert len(oauth_server.provider.clients) == 1
    assert call_whoami(session, user, scripted_model, "w4").startswith("signed in as")


def test_only_staff_allowed_to_change_toolsets_connect_a_shared_one_and_calls_use_it(
    user: Any,
    staff: Any,
    staff_admin: Any,
    oauth_server: OAuthServer,
    scripted_model: ScriptedModel,
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="shared")
    listed = api_client_for(user).get("/api/toolsets/").json()
    assert next(t for t in listed if t["id"] == toolset.pk)["connected"] is False
    for person in (user, staff):  # a member, and bare staff without the permission
        refused = client_for(person).get(f"/toolsets/{toolset.pk}/connect/")
        assert refused.status_code == 403
        assert "only staff allowed to change toolsets" in refused.content.decode()
    assert oauth_server.provider.clients == {}  # refused before anything was asked
    assert connect(staff_admin, toolset, oauth_server).status_code == 302
    toolset.refresh_from_db()
    assert toolset.oauth_tokens["token"]["access_token"] in oauth_server.provider.access
    assert not ToolsetCredential.objects.exists()
    listed = api_client_for(user).get("/api/toolsets/").json()
    assert next(t for t in listed if t["id"] == toolset.pk)["connected"] is True

    session = services.session_create(owner=user, need_user_confirm=False)
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk], user=user)
    assert call_whoami(session, user, scripted_model, "s1").startswith("signed in as")


def test_the_callback_takes_only_a_sign_in_this_person_started_once(
    user: Any, other_user: Any, staff_admin: Any, oauth_server: OAuthServer
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    mine = client_for(user)
    callback = sign_in(start(mine, toolset))
    # Another person cannot finish it (their session never started it)...
    stolen = client_for(other_user).get(callback)
    assert stolen.status_code == 400 and not ToolsetCredential.objects.exists()
    # ...a made-up state is refused...
    forged = mine.get("/toolsets/oauth/callback/?code=abc&state=made-up")
    assert forged.status_code == 400
    # ...the right person finishes it once, and only once.
    assert mine.get(callback).status_code == 302
    assert ToolsetCredential.objects.filter(user=user).exists()
    assert mine.get(callback).status_code == 400


def test_connect_refuses_what_it_cannot_connect_and_bad_input(
    user: Any, staff_admin: Any, oauth_server: OAuthServer
) -> None:
    plain = services.toolset_create(
        user=staff_admin, name="plain", kind="http", url=oauth_server.url, access="per_person"
    )
    browser = client_for(user)
    response = browser.get(f"/toolsets/{plain.pk}/connect/")
    assert (
        response.status_code == 400 and "does not sign in with OAuth" in response.content.decode()
    )
    assert browser.get("/toolsets/999999/connect/").status_code == 404
    # Not signed in: the login page first.
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    anonymous = Client().get(f"/toolsets/{toolset.pk}/connect/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    # The provider refusing: said so, nothing stored.
    start(browser, toolset)
    state = next(iter(browser.session["toolset_oauth"]))
    denied = browser.get(
        f"/toolsets/oauth/callback/?state={state}&error=access_denied&error_description=No+way"
    )
    assert denied.status_code == 400 and "No way" in denied.content.decode()
    assert not ToolsetCredential.objects.exists()
    # A `next` elsewhere is not followed.
    outside = sign_in(start(browser, toolset, next_path="https://evil.example/"))
    assert browser.get(outside)["Location"] == "/"
    # OAuth is for http toolsets only.
    with pytest.raises(Exception, match="Only an http toolset"):
        services.toolset_create(user=None, name="prog", kind="stdio", command="true", auth="oauth")


def test_tokens_and_registration_never_follow_a_toolset_to_another_server(
    user: Any, staff_admin: Any, oauth_server: OAuthServer
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    assert connect(user, toolset, oauth_server).status_code == 302
    toolset.refresh_from_db()
    assert toolset.oauth_client and ToolsetCredential.objects.get(user=user).oauth_tokens
    services.toolset_update(
        toolset_id=toolset.pk, user=staff_admin, url="https://elsewhere.example/mcp"
    )
    toolset.refresh_from_db()
    assert toolset.oauth_client == {} and toolset.oauth_tokens == {}
    assert ToolsetCredential.objects.get(user=user).oauth_tokens == {}


def test_the_admin_shows_whether_the_account_is_connected_and_links_to_connect(
    staff_admin: Any, oauth_server: OAuthServer
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="shared")
    admin = client_for(staff_admin)
    page = admin.get(f"/admin/planboard/toolset/{toolset.pk}/change/").content.decode()
    assert "Not connected" in page
    assert f"/toolsets/{toolset.pk}/connect/?next=%2Fadmin%2Fplanboard%2Ftoolset%2F" in page
    assert connect(staff_admin, toolset, oauth_server).status_code == 302
    page = admin.get(f"/admin/planboard/toolset/{toolset.pk}/change/").content.decode()
    assert "Connected —" in page
    stored = Toolset.objects.get(pk=toolset.pk)
    assert stored.oauth_tokens["token"]["access_token"] not in page  # never shown


def test_a_signed_in_servers_question_reaches_the_person_with_the_clock_stopped(
    user: Any,
    staff_admin: Any,
    handshake_oauth_server: OAuthServer,
    scripted_model: ScriptedModel,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A signed-in call's question reaches the person too, and their time does not count
    # against the tool timeout.
    settings.PLANBOARD_TOOL_TIMEOUT = 4
    toolset = oauth_toolset(staff_admin, handshake_oauth_server, access="per_person")
    services.toolset_refresh_tools(toolset_id=toolset.pk, tools=[{"name": "ask"}])
    services.toolset_update(toolset_id=toolset.pk, user=None, tool_policies={"ask": "auto"})
    session = services.session_create(owner=user, need_user_confirm=False)
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk], user=user)
    assert connect(user, toolset, handshake_oauth_server).status_code == 302
    scripted_model.script.extend([tool_calls(call("remote__ask", call_id="a1")), say("Ok.")])
    body = {"action": "accept", "content": {"city": "Quito", "nights": 4}}
    seen = answer_when_asked(monkeypatch, rest_answer(user, body, []), after=5.5)
    run = drive(post(session, user, "Book it"))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert seen[-1]["at"] >= 5.5
    assert result_of(session, "a1") == 'accept: {"city": "Quito", "nights": 4}'
