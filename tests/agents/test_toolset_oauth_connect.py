"""Connecting an OAuth toolset starts only from a deliberate, same-site POST: opening the
Connect address (a link in an email, a page elsewhere, a prefetch) shows what would be
connected and asks nothing of the provider; the page's button (CSRF-protected) starts it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from agents.mcp import oauth
from planboard import services
from planboard.models import Toolset, ToolsetCredential
from tests.support.mcp_oauth_server import OAuthServer, oauth_mcp_server
from tests.support.oauth_connect import form_fields, oauth_toolset, sign_in
from tests.support.web import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def oauth_server() -> Iterator[OAuthServer]:
    with oauth_mcp_server() as server:
        yield server


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each time Planboard begins a sign-in at a provider (discovery, registration): the
    toolset's id. The real start still runs."""
    seen: list[int] = []
    real = oauth.oauth_start

    def recorded(toolset: Toolset, *, redirect_uri: str) -> dict[str, Any]:
        seen.append(toolset.pk)
        return real(toolset, redirect_uri=redirect_uri)

    monkeypatch.setattr(oauth, "oauth_start", recorded)
    return seen


def strict_browser(user: Any) -> Client:
    """A signed-in browser whose POSTs need the CSRF token, as a real one's do."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    return browser


def unchanged(toolset: Toolset, server: OAuthServer) -> bool:
    stored = Toolset.objects.get(pk=toolset.pk)
    return stored.oauth_client == toolset.oauth_client and server.provider.clients == {}


def test_opening_connect_only_shows_what_would_be_connected(
    user: Any, staff_admin: Any, oauth_server: OAuthServer, starts: list[int]
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    browser = client_for(user)
    page = browser.get(f"/toolsets/{toolset.pk}/connect/", {"next": "/sessions/7/"})
    assert page.status_code == 200
    html = page.content.decode()
    assert "remote" in html and "127.0.0.1" in html  # the toolset, and where it signs in
    assert 'method="post"' in html
    assert form_fields(html)["next"] == "/sessions/7/"
    # Nothing was asked of the provider, nothing stored, no sign-in under way.
    assert starts == [] and unchanged(toolset, oauth_server)
    assert "toolset_oauth" not in browser.session
    chinese = browser.get(f"/toolsets/{toolset.pk}/connect/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "你自己的账号" in chinese.content.decode() and "继续登录" in chinese.content.decode()

    shared = oauth_toolset(staff_admin, oauth_server, access="shared", name="team")
    html = client_for(staff_admin).get(f"/toolsets/{shared.pk}/connect/").content.decode()
    assert "one account for everyone" in html and form_fields(html)["next"] == "/"
    assert starts == []


def test_pressing_connect_needs_the_pages_csrf_token(
    user: Any, staff_admin: Any, oauth_server: OAuthServer, starts: list[int]
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    browser = strict_browser(user)
    address = f"/toolsets/{toolset.pk}/connect/"
    fields = form_fields(browser.get(address, {"next": "/sessions/"}).content.decode())
    assert fields["csrfmiddlewaretoken"]

    # Another site's form posting to the address: refused, nothing asked or stored.
    forged = browser.post(address, {"next": "/sessions/"})
    assert forged.status_code == 403
    assert starts == [] and unchanged(toolset, oauth_server)

    # The page's own button: discovery and registration happen, the browser goes to sign in.
    pressed = browser.post(address, fields)
    assert pressed.status_code == 302
    assert pressed["Location"].startswith(f"{oauth_server.base}/authorize?")
    assert starts == [toolset.pk] and len(oauth_server.provider.clients) == 1
    done = browser.get(sign_in(pressed["Location"]))
    assert done.status_code == 302 and done["Location"] == "/sessions/"
    assert ToolsetCredential.objects.get(toolset=toolset, user=user).oauth_tokens
    # Connecting again: the page now names the authorization server found last time.
    again = browser.get(address).content.decode()
    assert "You will sign in at 127.0.0.1, then come back here." in again


def test_the_page_never_shows_credentials_the_servers_url_carries(
    user: Any, staff_admin: Any, oauth_server: OAuthServer, starts: list[int]
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    secret_url = oauth_server.url.replace("http://", "http://bot:hunter2@") + "?key=abc123"
    services.toolset_update(toolset_id=toolset.pk, user=staff_admin, url=secret_url)
    page = client_for(user).get(f"/toolsets/{toolset.pk}/connect/").content.decode()
    assert "127.0.0.1" in page
    assert "hunter2" not in page and "abc123" not in page and "bot:" not in page


def test_the_button_returns_only_to_a_path_of_this_site_and_checks_who_presses_it(
    user: Any, staff_admin: Any, oauth_server: OAuthServer, starts: list[int]
) -> None:
    toolset = oauth_toolset(staff_admin, oauth_server, access="per_person")
    browser = client_for(user)
    address = f"/toolsets/{toolset.pk}/connect/"
    page = browser.get(address, {"next": "https://evil.example/"}).content.decode()
    assert form_fields(page)["next"] == "/" and 'href="https://evil' not in page
    # A `next` forged into the POST is not followed either.
    pressed = browser.post(address, {"next": "//evil.example/x"})
    assert browser.get(sign_in(pressed["Location"]))["Location"] == "/"

    # A shared toolset: members may neither see its page nor press its button.
    shared = oauth_toolset(staff_admin, oauth_server, access="shared", name="team")
    before = len(starts)
    for method in (browser.get, browser.post):
        refused = method(f"/toolsets/{shared.pk}/connect/")
        assert refused.status_code == 403
        assert "only staff allowed to change toolsets" in refused.content.decode()
    assert browser.post("/toolsets/999999/connect/").status_code == 404
    assert len(starts) == before
    assert browser.put(address).status_code == 405
    # Not signed in: the login page, nothing started.
    anonymous = Client().post(address)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert len(starts) == before
