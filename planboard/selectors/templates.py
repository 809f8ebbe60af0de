"""Plan templates: the ones a person may see, one as REST answers and pages show it, and the
teams its owner may share it with."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from planboard.models import PlanTemplate, Team
from planboard.selectors.access import Person, can_change_template, templates_visible_to
from planboard.shapes import TemplateSnapshot, TemplateSubtask
from planboard.snapshots import iso


def templates_for_list(user: Person) -> QuerySet[PlanTemplate]:
    """What the Templates page and `GET /api/templates/` list, owner and team read with them."""
    return templates_visible_to(user).select_related("owner", "team").order_by("name", "id")


def template_visible(user: Person, template_id: int) -> PlanTemplate | None:
    return templates_for_list(user).filter(pk=template_id).first()


def template_snapshot(template: PlanTemplate) -> TemplateSnapshot:
    subtasks: list[TemplateSubtask] = [
        {
            "name": str(item.get("name", "")),
            "description": str(item.get("description", "")),
            "expected_outcome": str(item.get("expected_outcome", "")),
            "agent": str(item.get("agent", "")),
            # A row saved before dependencies has none; anything else in it is not a list.
            "blocked_by": _positions(item.get("blocked_by")),
        }
        for item in template.subtasks
    ]
    return {
        "id": template.pk,
        "owner": {"id": template.owner_id, "username": template.owner.get_username()},
        "team": (
            {"id": template.team_id, "name": template.team.name}
            if template.team_id is not None and template.team is not None
            else None
        ),
        "name": template.name,
        "description": template.description,
        "expected_outcome": template.expected_outcome,
        "subtasks": subtasks,
        "source_plan_id": template.source_plan_id,
        "created_at": iso(template.created_at),
        "updated_at": iso(template.updated_at),
    }


def _positions(value: object) -> list[int]:
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, int) and not isinstance(v, bool)]


def template_permissions(user: Person, template: PlanTemplate) -> dict[str, bool]:
    """What `user` may do to a template they see (everyone who sees one may start from it)."""
    return {
        "can_change": can_change_template(user, template.owner_id, "change"),
        "can_delete": can_change_template(user, template.owner_id, "delete"),
    }


def template_share_teams(*, owner_id: int) -> QuerySet[Team, Any]:
    """The teams a template of `owner_id` may be shared with: the owner's own."""
    return Team.objects.filter(memberships__user_id=owner_id).order_by("name").distinct()
