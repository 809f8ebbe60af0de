"""The Templates page: the plan templates a person sees, editing one (text, team, subtasks),
deleting it, and starting a session from it. Every change goes through
`planboard.services` (the forms post here; saving a plan as a template is the REST API's,
called by the "Save as template" buttons)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from planboard import selectors, services
from planboard.exceptions import Forbidden, PlanError
from planboard.models import AgentProfile, PlanTemplate
from planboard.users import signed_in
from planboard.web.strings import js_strings
from planboard.web.template_forms import (
    SubtaskFormSet,
    TemplateForm,
    subtasks_of,
    waits_for_text,
)

TEMPLATE_LIST_LIMIT = 200


def _visible(request: HttpRequest, template_id: int) -> PlanTemplate:
    found = selectors.template_visible(signed_in(request), template_id)
    if found is None:
        raise Http404("No such template.")
    return found


def _refused(error: PlanError) -> Exception:
    """A service's refusal as the pages answer it: 404 unseen, 403 read-only."""
    if error.code == "not_found":
        return Http404(error.message)
    if isinstance(error, Forbidden):
        return PermissionDenied(error.message)
    return error


def _list_page(
    request: HttpRequest, *, failed: dict[str, Any] | None = None, status: int = 200
) -> HttpResponse:
    me = signed_in(request)
    templates = list(selectors.templates_for_list(me)[:TEMPLATE_LIST_LIMIT])

    def card(template: PlanTemplate) -> dict[str, Any]:
        return {
            "template": template,
            "subtasks": selectors.template_snapshot(template)["subtasks"],
            **selectors.template_permissions(me, template),
        }

    return render(
        request,
        "planboard/template_list.html",
        {
            "own": [card(t) for t in templates if t.owner_id == me.pk],
            "shared": [card(t) for t in templates if t.owner_id != me.pk],
            "failed": failed,
            "nav": "templates",
        },
        status=status,
    )


@login_required
@require_http_methods(["GET"])
def template_list(request: HttpRequest) -> HttpResponse:
    return _list_page(request)


@login_required
@require_POST
def template_start(request: HttpRequest, template_id: int) -> HttpResponse:
    """A new session of the signed-in person, its plan drafted from the template. A template
    naming a profile nobody may use now is refused with the reason and a second button that
    starts without those profiles."""
    try:
        started = services.session_start_from_template(
            template_id=template_id,
            user=signed_in(request),
            drop_unavailable_profiles=request.POST.get("drop_unavailable_profiles") == "1",
        )
    except PlanError as error:
        if error.code == "not_found" or isinstance(error, Forbidden):
            raise _refused(error) from error
        failed = {"id": template_id, "message": error.message, "code": error.code}
        return _list_page(request, failed=failed, status=400)
    return HttpResponseRedirect(reverse("web:session", args=[started.session.pk]))


@login_required
@require_POST
def template_delete(request: HttpRequest, template_id: int) -> HttpResponse:
    try:
        services.template_delete(template_id=template_id, user=signed_in(request))
    except PlanError as error:
        raise _refused(error) from error
    return HttpResponseRedirect(reverse("web:templates"))


def _profile_choices() -> list[tuple[str, str]]:
    rows = AgentProfile.objects.filter(enabled=True).order_by("name").values_list("name", "title")
    return [(name, title or name) for name, title in rows]


@login_required
@require_http_methods(["GET", "POST"])
def template_edit(request: HttpRequest, template_id: int) -> HttpResponse:
    """One template's form. Those who may only read it (team members, view-only staff) see it
    without the form's buttons; a refused save shows the reason with everything typed kept."""
    me = signed_in(request)
    template = _visible(request, template_id)
    allowed = selectors.template_permissions(me, template)
    teams = list(
        selectors.template_share_teams(owner_id=template.owner_id).values_list("pk", "name")
    )
    snapshot = selectors.template_snapshot(template)
    data = request.POST if request.method == "POST" and allowed["can_change"] else None
    form = TemplateForm(
        data,
        teams=teams,
        initial={**snapshot, "team": str(template.team_id or "")},
    )
    subtasks = SubtaskFormSet(
        data,
        initial=[
            {**s, "ORDER": i + 1, "waits_for": waits_for_text(s["blocked_by"])}
            for i, s in enumerate(snapshot["subtasks"])
        ],
        prefix="subtasks",
        form_kwargs={"profiles": _profile_choices()},
    )
    status = 200
    if data is not None:
        if form.is_valid() and subtasks.is_valid():
            try:
                services.template_update(
                    template_id=template.pk,
                    user=me,
                    **form.values(),
                    subtasks=subtasks_of(subtasks),
                )
            except PlanError as error:
                form.add_error(None, error.message)
            else:
                return HttpResponseRedirect(
                    reverse("web:template", args=[template.pk]) + "?saved=1"
                )
        status = 400
    elif request.method == "POST":
        raise PermissionDenied("Only the template's owner, or staff allowed to, edit it.")
    return render(
        request,
        "planboard/template_edit.html",
        {
            "template": template,
            "form": form,
            "subtasks": subtasks,
            "saved": request.GET.get("saved") == "1" and data is None,
            "nav": "templates",
            # For the "Schedule" dialog (frontend/js/schedule-panel.js).
            "page": {"me": {"id": me.pk}, "template": {"id": template.pk}},
            "strings": js_strings(),
            **allowed,
        },
        status=status,
    )
