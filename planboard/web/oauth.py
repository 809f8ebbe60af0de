"""Connecting an OAuth toolset: "Connect" sends a person to sign in at the MCP server's
authorization server, the callback stores the tokens it gives back.

`GET /toolsets/<id>/connect/?next=<path>` shows which toolset and provider the person is about
to connect, and changes nothing: starting a sign-in talks to the provider and rewrites the
toolset's registration, so a link from anywhere (another site, an email, a prefetch) must not
do it. Its button POSTs back to the same address (CSRF-protected); only then does the MCP SDK
discover the authorization server, register Planboard there when needed and build the
authorization request with PKCE (`settings.PLANBOARD_TOOL_OAUTH_START`, in
`agents.mcp`: planboard never imports the SDK). Both ask
`services.toolset_oauth_connectable` first (a per-person toolset the person may use; a shared
one only staff allowed to change toolsets). The state, the PKCE verifier and where to return (a
path of this site only) are kept server-side in the person's session (the database), bound to
them; the person is redirected to the provider.

`GET /toolsets/oauth/callback/?code=…&state=…`: the state must be one this person's session
started (once, within `FLOW_SECONDS`); the code is exchanged for tokens through the SDK
(`PLANBOARD_TOOL_OAUTH_FINISH`) and stored encrypted (`services.toolset_oauth_connect`), and
the person returns to where they came from.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.module_loading import import_string
from django.views.decorators.http import require_GET, require_http_methods

from planboard import services
from planboard.exceptions import PlanError
from planboard.models import Toolset
from planboard.users import signed_in

SESSION_KEY = "toolset_oauth"
# How long a started sign-in may take before its callback is refused.
FLOW_SECONDS = 15 * 60
# Sign-ins one person may have under way at once (older ones are forgotten).
MAX_FLOWS = 5


def redirect_uri() -> str:
    """Where providers send people back: one address for every toolset."""
    return settings.PLANBOARD_PUBLIC_URL + reverse("web:toolset_oauth_callback")


def _problem(request: HttpRequest, message: str, *, status: int = 400) -> HttpResponse:
    return render(request, "planboard/toolset_connect.html", {"problem": message}, status=status)


def _status(exc: PlanError) -> int:
    return 404 if exc.code == "not_found" else exc.status_code


def _next(request: HttpRequest, wanted: str | None) -> str:
    """Where to return after signing in: a path of this site, never another site."""
    wanted = wanted or "/"
    if wanted.startswith("/") and url_has_allowed_host_and_scheme(
        wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return wanted
    return "/"


def _provider(toolset: Toolset) -> tuple[str, bool]:
    """Where the person will sign in, as far as is known without asking the server: the
    authorization server of an earlier registration (True), else the MCP server that names it
    (False). Hosts only: the URL may carry credentials."""
    known = str((toolset.oauth_client or {}).get("auth_server_url") or "")
    return urlsplit(known or toolset.url).hostname or "", bool(known)


@login_required
@require_http_methods(["GET", "POST"])
def connect(request: HttpRequest, toolset_id: int) -> HttpResponse:
    user = signed_in(request)
    try:
        toolset = services.toolset_oauth_connectable(toolset_id=toolset_id, user=user)
    except PlanError as exc:
        return _problem(request, exc.message, status=_status(exc))
    if request.method != "POST":
        provider, provider_known = _provider(toolset)
        context = {
            "toolset": toolset,
            "provider": provider,
            "provider_known": provider_known,
            "shared": toolset.access == Toolset.Access.SHARED,
            "next": _next(request, request.GET.get("next")),
        }
        return render(request, "planboard/toolset_connect.html", context)
    try:
        started: dict[str, Any] = import_string(settings.PLANBOARD_TOOL_OAUTH_START)(
            toolset, redirect_uri=redirect_uri()
        )
        services.toolset_oauth_register(toolset_id=toolset.pk, client=started["client"])
    except PlanError as exc:
        return _problem(request, exc.message, status=_status(exc))
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
        "next": _next(request, request.POST.get("next")),
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
            request,
            "This sign-in was not started here, was already used, or took too long. "
            "Press Connect again.",
        )
    if request.GET.get("error"):
        reason = str(request.GET.get("error_description") or request.GET["error"])[:300]
        return _problem(request, f"The provider did not grant access: {reason}")
    code = request.GET.get("code") or ""
    if not code:
        return _problem(request, "The provider sent no authorization code.")
    try:
        toolset = services.toolset_oauth_connectable(toolset_id=flow["toolset"], user=user)
        tokens = import_string(settings.PLANBOARD_TOOL_OAUTH_FINISH)(
            toolset, code=code, code_verifier=flow["verifier"]
        )
        services.toolset_oauth_connect(toolset_id=toolset.pk, user=user, tokens=tokens)
    except PlanError as exc:
        return _problem(request, exc.message, status=_status(exc))
    return HttpResponseRedirect(flow["next"])
