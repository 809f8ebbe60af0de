"""The page behind a signed action link (from an email or a webhook message).

GET shows what the link would do and changes nothing (mail scanners and link previews fetch
links on their own); the POST from that page makes the decision as the link's person, without
a password, once. Used, expired, refused, changed and already-decided links say so. The token
is the URL: the page sends no Referer anywhere and is never cached, and the log filter hides
the token (`planboard.log_redaction`).

No CSRF check on the POST: the token in the URL is the whole credential (the decision is the
link person's whoever is signed in, and nothing is read from the session cookie), so a forged
request would need the token, which is all a direct POST needs. And under `no-referrer`
browsers send `Origin: null` with the page's own form, which Django's check refuses.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from planboard import services
from planboard.selectors.inbox import InboxItem

STATUS = {
    "": 200,
    services.action_links.DECIDED: 200,
    services.action_links.USED: 409,
    services.action_links.ALREADY_DECIDED: 409,
    services.action_links.CHANGED: 409,
    services.action_links.EXPIRED: 410,
    services.action_links.REFUSED: 404,
}


def _no_referrer(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> HttpResponse:
        response = view(*args, **kwargs)
        response["Referrer-Policy"] = "no-referrer"  # the link's URL is its secret
        return response

    return wrapped


@_no_referrer
@never_cache
@csrf_exempt
@require_http_methods(["GET", "POST"])
def action_link(request: HttpRequest, token: str) -> HttpResponse:
    item: InboxItem | None = None
    if request.method == "POST":
        outcome, link = services.action_link_use(token=token)
    else:
        outcome, link, item = services.action_link_preview(token=token)
    context = {"outcome": outcome, "link": link, "item": item}
    return render(request, "planboard/action_link.html", context, status=STATUS[outcome])
