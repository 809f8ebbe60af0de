"""Server-rendered pages: the session list, the live session page and the history review.

Each page renders a shell plus the data its ES module needs, embedded with `json_script`, so
that the first paint needs no extra request. Every change then goes through the REST API
(and so through `planboard.services`); the pages themselves only read, except for creating a
session from the list page.
"""

from __future__ import annotations

import math
from typing import Any

from axes.helpers import get_cool_off
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_http_methods

from planboard import selectors, services, workspace
from planboard.exceptions import PlanError
from planboard.models import ChatSession, Plan
from planboard.users import signed_in
from planboard.web.forms import HistoryFilterForm, SessionCreateForm
from planboard.web.strings import js_strings

HISTORY_PAGE_SIZE = 25
# How much history a page embeds; older changes and messages are fetched from the REST API.
REVIEW_EVENTS = 100
REVIEW_MESSAGES = 200
SESSION_LIST_LIMIT = 100


def login_locked_out(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict[str, Any] | None
) -> HttpResponse:
    """What the web and admin logins answer once axes locks a (username, address) pair out.

    Called by axes (AXES_LOCKOUT_CALLABLE) in place of the login form, with 429.
    """
    cool_off = get_cool_off(request)
    minutes = math.ceil(cool_off.total_seconds() / 60) if cool_off else None
    return render(request, "registration/locked_out.html", {"minutes": minutes}, status=429)


def _me(user: User) -> dict[str, Any]:
    return {"id": user.pk, "username": user.get_username(), "is_staff": user.is_staff}


@login_required
@require_http_methods(["GET", "POST"])
def session_list(request: HttpRequest) -> HttpResponse:
    """The user's sessions (and, for leads, their team's) plus the new-session form."""
    form = SessionCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            session = services.session_create(owner=signed_in(request), **form.cleaned_data)
        except PlanError as exc:
            form.add_error(None, exc.message)
        else:
            return HttpResponseRedirect(reverse("web:session", args=[session.pk]))
    me = signed_in(request)
    visible = selectors.sessions_for_list(me)
    own = list(visible.filter(owner=me)[:SESSION_LIST_LIMIT])
    shared = list(visible.exclude(owner=me)[:SESSION_LIST_LIMIT])
    runs = selectors.latest_runs_by_session([s.pk for s in own + shared])
    return render(
        request,
        "planboard/session_list.html",
        {
            # (session, its latest run or None) pairs, for the cards.
            "own_sessions": [(s, runs.get(s.pk)) for s in own],
            "shared_sessions": [(s, runs.get(s.pk)) for s in shared],
            "form": form,
            "nav": "sessions",
        },
        status=400 if request.method == "POST" else 200,
    )


def _visible_session(request: HttpRequest, session_id: int) -> ChatSession:
    return get_object_or_404(selectors.sessions_visible_to(signed_in(request)), pk=session_id)


@login_required
@require_http_methods(["GET"])
def session_file(request: HttpRequest, session_id: int, file_path: str) -> HttpResponseBase:
    """A workspace file's download link on the session page (same access as the page)."""
    session = _visible_session(request, session_id)
    file = selectors.workspace_file(session_id=session.pk, path=file_path)
    if file is None:
        raise Http404("No such file.")
    return workspace.file_response(file, selectors.workspace_file_open(file))


@login_required
@ensure_csrf_cookie
def session_page(request: HttpRequest, session_id: int) -> HttpResponse:
    """Chat with the agent on one side, the live plan board on the other.

    The owner (and staff with the permissions) edit; leads of the owner's team and staff who
    may only view watch read-only; others get 404.
    """
    session = _visible_session(request, session_id)
    snapshot = selectors.session_snapshot(session_id=session.pk)
    # Without a current plan the board shows the session's latest (finished) plan, so a run
    # that just finished its plan still shows the result.
    last_plan = None
    if snapshot["current_plan"] is None:
        last_plan_id = selectors.latest_plan_id(session_id=session.pk)
        if last_plan_id is not None:
            last_plan = selectors.plan_snapshot(plan_id=last_plan_id)
    messages = selectors.session_messages(session_id=session.pk, last=REVIEW_MESSAGES + 1)
    page = {
        "session": snapshot,
        "messages": messages[-REVIEW_MESSAGES:],
        "earlier_messages": len(messages) > REVIEW_MESSAGES,
        "last_plan": last_plan,
        "me": _me(signed_in(request)),
        "can_edit": selectors.can_edit_board(signed_in(request), session.owner_id),
        # Named by the owner to answer: may answer what waits (a question, a plan's go-ahead,
        # a call's approval). Starting and steering runs, attaching resources and "always
        # allow" need `can_write` (the owner, or staff allowed to change sessions).
        "can_answer": selectors.can_answer_session(
            signed_in(request), session.owner_id, session_id=session.pk
        ),
        "can_write": selectors.can_act_in_session(signed_in(request), session.owner_id),
        "history_url": reverse("web:history"),
        "answerers": [p["username"] for p in selectors.session_answerers(session_id=session.pk)],
    }
    return render(
        request,
        "planboard/session.html",
        {
            "chat_session": session,
            "page": page,
            "can_edit": page["can_edit"],
            "strings": js_strings(),
            "nav": "sessions",
        },
    )


@login_required
def history_list(request: HttpRequest) -> HttpResponse:
    """Historical plans the user may read (own; team members' for leads; all for staff with
    the plan's view permission)."""
    form = HistoryFilterForm(
        request.GET or None,
        owners=selectors.owner_choices(signed_in(request)),
        teams=selectors.team_choices(signed_in(request)),
    )
    filters: dict[str, Any] = {}
    if form.is_bound and form.is_valid():
        filters = form.cleaned_data
    plans = selectors.filter_history(signed_in(request), filters)
    paginator = Paginator(plans, HISTORY_PAGE_SIZE)
    page_obj = paginator.get_page(request.GET.get("page"))
    # Keep the filters in the pagination links.
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "planboard/history_list.html",
        {
            "form": form,
            "page_obj": page_obj,
            "plans": page_obj.object_list,
            "filter_query": query.urlencode(),
            "form_errors": form.is_bound and not form.is_valid(),
            "nav": "history",
        },
        status=400 if form.is_bound and not form.is_valid() else 200,
    )


@login_required
@ensure_csrf_cookie  # "Continue from here" posts to the REST API
def history_plan(request: HttpRequest, plan_id: int) -> HttpResponse:
    """One plan for review: the final board, its session's transcript, its timeline, where it
    came from and where it was continued; anyone who reads it may continue it from a version
    of its history (a new session of their own)."""
    me = signed_in(request)
    plan: Plan = get_object_or_404(
        selectors.plans_visible_to(me).select_related("owner", "session"),
        pk=plan_id,
    )
    snapshot = selectors.plan_snapshot(plan_id=plan.pk)
    # A long history would make a huge page: embed the newest changes and messages, starting
    # the replay from the board as it was before them; the page fetches the rest from the REST
    # API when asked.
    events, earlier_events = selectors.plan_events_window(plan_id=plan.pk, last=REVIEW_EVENTS)
    base = (
        selectors.plan_snapshot_at(plan_id=plan.pk, version=earlier_events)
        if earlier_events
        else None
    )
    messages = (
        selectors.session_messages(session_id=plan.session_id, last=REVIEW_MESSAGES + 1)
        if plan.session_id
        else []
    )
    earlier_messages = len(messages) > REVIEW_MESSAGES
    messages = messages[-REVIEW_MESSAGES:]
    session_url = None
    if plan.session_id and (
        selectors.sessions_visible_to(signed_in(request)).filter(pk=plan.session_id).exists()
    ):
        session_url = reverse("web:session", args=[plan.session_id])
    page = {
        "plan": snapshot,
        "events": events,
        "events_base": base,
        "usage": selectors.plan_usage(plan_id=plan.pk),
        "decisions": selectors.decisions(plan_id=plan.pk),
        "earlier_events": earlier_events,
        "messages": messages,
        "earlier_messages": earlier_messages,
        "session_id": plan.session_id if session_url else None,
        "me": _me(me),
        "can_edit": False,
        "fork_url": reverse("api-plan-fork", args=[plan.pk]),
    }
    return render(
        request,
        "planboard/history_plan.html",
        {
            "plan": plan,
            "page": page,
            "session_url": session_url,
            "origin": selectors.fork_origin(plan_id=plan.pk, user=me),
            "continuations": selectors.plan_continuations(plan_id=plan.pk, user=me),
            "strings": js_strings(),
            "nav": "history",
        },
    )


@login_required
@ensure_csrf_cookie
def inbox_page(request: HttpRequest) -> HttpResponse:
    """Everything waiting on the signed-in person; the page fetches `GET /api/inbox/` and acts
    through the endpoints that own each decision."""
    me = signed_in(request)
    page = {"me": _me(me), "items": selectors.inbox_items(user=me, include_snoozed=True)}
    return render(
        request,
        "planboard/inbox.html",
        {"page": page, "strings": js_strings(), "nav": "inbox"},
    )
