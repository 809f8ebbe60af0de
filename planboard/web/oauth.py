"""Connecting an OAuth toolset (issue 24): "Connect" sends a person to sign in at the MCP
server's authorization server, the callback stores the tokens it gives back.

`GET /toolsets/<id>/connect/?next=<path>`: for a person allowed to connect the toolset
(`services.toolset_oauth_connectable`: a per-person toolset they may use; a shared one only
staff allowed to change toolsets). The MCP SDK discovers the authorization server, registers
Planboard there when needed and builds the authorization request with PKCE
(`settings.PLANBOARD_TOOL_OAUTH_START`, in `agents.mcp_client`: planboard never imports the
SDK). The state, the PKCE verifier and where to return are kept server-side in the person's
session (the database), bound to them; the person is redirected to the provider.

`GET /toolsets/oauth/callback/?code=…&state=…`: the state must be one this person's session
started (once, within `FLOW_SECONDS`); the code is exchanged for tokens through the SDK
(`PLANBOARD_TOOL_OAUTH_FINISH`) and stored encrypted (`services.toolset_oauth_connect`), and
the person returns to where they came from.
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import escape
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.module_loading import import_string
from django.views.decorators.http import require_GET

from planboard import services
from planboard.exceptions import PlanError
from planboard.users import signed_in

SESSION_KEY = "toolset_oauth"
# How long a started sign-in may take before its callback is refused.
FLOW_SECONDS = 15 * 60
# Sign-ins one person may have under way at once (older ones are forgotten).
MAX_FLOWS = 5


def redirect_uri() -> str:
    """Where providers send people back: one address for every toolset."""
    return settings.PLANBOARD_PUBLIC_URL + reverse("web:toolset_oauth_callback")


def _problem(message: str, *, status: int = 400) -> HttpResponse:
    body = (
        "<!doctype html><title>Connecting a toolset</title>"
        f"<h1>The toolset could not be connected</h1><p>{escape(message)}</p>"
        '<p><a href="/">Back to Planboard</a></p>'
    )
    return HttpResponse(body, status=status)


def _status(exc: PlanError) -> int:
    return 404 if exc.code == "not_found" else exc.status_code


def _next(request: HttpRequest) -> str:
    wanted = request.GET.get("next") or "/"
    if url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return "/"


@login_required
@require_GET
def connect(request: HttpRequest, toolset_id: int) -> HttpResponse:
    user = signed_in(request)
    try:
        toolset = services.toolset_oauth_connectable(toolset_id=toolset_id, user=user)
        started: dict[str, Any] = import_string(settings.PLANBOARD_TOOL_OAUTH_START)(
            toolset, redirect_uri=redirect_uri()
        )
        services.toolset_oauth_register(toolset_id=toolset.pk, client=started["client"])
    except PlanError as exc:
        return _problem(exc.message, status=_status(exc))
    flows: dict[str, Any] = dict(request.session.get(SESSION_KEY) or {})
    now = time.time()
    flows = {k: v for k, v in flows.items() if now - v["started"] < FLOW_SECONDS}
    for old in sorted(flows, key=lambda k: flows[k]["started"])[
        : max(0, len(flows) - MAX_FLOWS + 1)
    ]:
        del flows[old]
    flows[started["state"]] = {
        "toolset": toolset.pk,
        "user": user.pk,
        "verifier": started["code_verifier"],
        "next": _next(request),
        "started": now,
    }
    request.session[SESSION_KEY] = flows
    return HttpResponseRedirect(started["authorization_url"])


@login_required
@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    user = signed_in(request)
    state = request.GET.get("state") or ""
    flows: dict[str, Any] = dict(request.session.get(SESSION_KEY) or {})
    flow = flows.pop(state, None)  # used once, whatever happens next
    request.session[SESSION_KEY] = flows
    if flow is None or flow["user"] != user.pk or time.time() - flow["started"] > FLOW_SECONDS:
        return _problem(
            "This sign-in was not started here, was already used, or took too long. "
            "Press Connect again."
        )
    if request.GET.get("error"):
        reason = str(request.GET.get("error_description") or request.GET["error"])[:300]
        return _problem(f"The provider did not grant access: {reason}")
    code = request.GET.get("code") or ""
    if not code:
        return _problem("The provider sent no authorization code.")
    try:
        toolset = services.toolset_oauth_connectable(toolset_id=flow["toolset"], user=user)
        tokens = import_string(settings.PLANBOARD_TOOL_OAUTH_FINISH)(
            toolset, code=code, code_verifier=flow["verifier"]
        )
        services.toolset_oauth_connect(toolset_id=toolset.pk, user=user, tokens=tokens)
    except PlanError as exc:
        return _problem(exc.message, status=_status(exc))
    return HttpResponseRedirect(flow["next"])
