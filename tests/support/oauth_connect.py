"""Connecting an OAuth toolset as a person's browser does it: the Connect page (GET, changes
nothing), its button (a POST with the CSRF token), the provider's sign-in, the callback."""

from __future__ import annotations

import re
from typing import Any

import httpx2
from django.conf import settings
from django.test import Client

from planboard import services
from planboard.models import Toolset
from tests.support.mcp_oauth_server import OAuthServer
from tests.support.web import client_for


def oauth_toolset(
    staff_admin: Any, server: OAuthServer, *, access: str, name: str = "remote"
) -> Toolset:
    toolset = services.toolset_create(
        user=staff_admin, name=name, kind="http", url=server.url, auth="oauth", access=access
    )
    services.toolset_refresh_tools(
        toolset_id=toolset.pk, tools=[{"name": "whoami", "read_only": True}]
    )
    toolset.refresh_from_db()
    return toolset


def form_fields(page: str) -> dict[str, str]:
    """The hidden inputs of the Connect page's form (the CSRF token, where to return)."""
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page))


def start(browser: Client, toolset: Toolset, *, next_path: str = "/sessions/") -> str:
    """Open the Connect page and press its button: where Planboard sends the browser (the
    provider's authorize URL)."""
    page = browser.get(f"/toolsets/{toolset.pk}/connect/", {"next": next_path})
    assert page.status_code == 200, page.content.decode()[:500]
    response = browser.post(f"/toolsets/{toolset.pk}/connect/", form_fields(page.content.decode()))
    assert response.status_code == 302, response.content.decode()[:500]
    return str(response["Location"])


def sign_in(authorize_url: str) -> str:
    """The person signs in at the provider (it approves at once): the path of the callback
    the provider sends them back to."""
    answer = httpx2.get(authorize_url, follow_redirects=False, timeout=20)
    assert answer.status_code in (302, 303, 307), answer.text[:500]
    back = answer.headers["location"]
    assert back.startswith(settings.PLANBOARD_PUBLIC_URL + "/toolsets/oauth/callback/")
    return back[len(settings.PLANBOARD_PUBLIC_URL) :]


def connect(user: Any, toolset: Toolset, server: OAuthServer) -> Any:
    """The whole round for `user`: the callback's answer."""
    browser = client_for(user)
    authorize = start(browser, toolset, next_path="/sessions/")
    assert authorize.startswith(f"{server.base}/authorize?")
    assert "code_challenge_method=S256" in authorize and "state=" in authorize
    return browser.get(sign_in(authorize))
