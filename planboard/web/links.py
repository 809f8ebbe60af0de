"""The page behind a signed action link (from an email or a webhook message).

GET shows what the link would do and changes nothing (mail scanners and link previews fetch
links on their own); the POST from that page makes the decision as the link's person, without
a password, once. Used, expired, refused and already-decided links say so.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_http_methods

from planboard import selectors, services

STATUS = {
    services.notifications.DECIDED: 200,
    services.notifications.USED: 409,
    services.notifications.ALREADY_DECIDED: 409,
    services.notifications.EXPIRED: 410,
    services.notifications.REFUSED: 404,
}


@ensure_csrf_cookie
@require_http_methods(["GET", "POST"])
def action_link(request: HttpRequest, token: str) -> HttpResponse:
    if request.method == "POST":
        outcome, link = services.action_link_use(token=token)
        return render(
            request,
            "planboard/action_link.html",
            {"outcome": outcome, "link": link, "done": True},
            status=STATUS[outcome],
        )
    link = services.action_link_find(token=token)
    outcome = ""
    item = None
    if link is None:
        outcome = services.notifications.REFUSED
    elif link.used_at is not None:
        outcome = services.notifications.USED
    elif link.expires_at <= timezone.now():
        outcome = services.notifications.EXPIRED
    else:
        item = selectors.inbox_item(user=link.user, key=link.item_key)
        if item is None:
            outcome = services.notifications.ALREADY_DECIDED
    return render(
        request,
        "planboard/action_link.html",
        {"outcome": outcome, "link": link, "item": item, "done": False},
        status=STATUS.get(outcome, 200),
    )
