"""Plan templates: save a plan's text and subtasks, edit and delete them, start a session from
one. A template holds no state, outcome or history; a plan started from it is a new plan
(version 1, every subtask `todo`) created by `plan_create` like any other.

Who may: anyone signed in saves the plans they can read as their own templates; the owner,
or staff with `change_`/`delete_plantemplate`, edit and delete one; whoever sees a template
(owner, members of the team it is shared with, staff with `view_plantemplate`) starts from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction

from planboard import selectors
from planboard.exceptions import Forbidden, PlanError
from planboard.models import ChatSession, Plan, PlanTemplate, TeamMembership
from planboard.plan_templates import (
    agents_of,
    clean_subtasks,
    plan_subtask_specs,
    subtasks_from_plan,
    unavailable_profiles,
)
from planboard.services._core import Actor, _clean_name, _clean_text
from planboard.services.plans import plan_create
from planboard.services.sessions import session_create
from planboard.shapes import TemplateSubtask

TEMPLATE_FIELDS = frozenset({"name", "description", "expected_outcome", "subtasks", "team_id"})


@dataclass(frozen=True)
class StartedFromTemplate:
    """A session started from a template: its drafted plan, and the profiles left out
    ({subtask position: profile name}) when the starter asked to drop unavailable ones."""

    session: ChatSession
    plan: Plan
    dropped_profiles: dict[int, str] = field(default_factory=dict)


def _signed_in(user: User | AnonymousUser) -> User:
    if not isinstance(user, User) or not user.is_authenticated or not user.is_active:
        raise Forbidden("Sign in with an active account to use plan templates.")
    return user


def _clean_team(value: Any, *, owner_id: int) -> int | None:
    """The team a template is shared with: none, or one its owner belongs to."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlanError("'team_id' must be a team's id, or null to share with nobody.")
    if not TeamMembership.objects.filter(team_id=value, user_id=owner_id).exists():
        raise PlanError(
            "A template can be shared only with a team its owner belongs to.", code="invalid_team"
        )
    return value


def _visible_template(user: User, template_id: int) -> PlanTemplate:
    found = selectors.template_visible(user, template_id)
    if found is None:
        raise PlanError(f"Template {template_id} was not found.", code="not_found")
    return found


def template_create(
    *,
    user: User | AnonymousUser,
    name: Any,
    description: Any = "",
    expected_outcome: Any = "",
    subtasks: Any = (),
    team_id: Any = None,
) -> PlanTemplate:
    """A new template owned by `user`, from the given text and subtasks (each naming an
    enabled profile, if any)."""
    owner = _signed_in(user)
    with transaction.atomic():
        return PlanTemplate.objects.create(
            owner=owner,
            name=_clean_name(name),
            description=_clean_text(description, field="description"),
            expected_outcome=_clean_text(expected_outcome, field="expected_outcome"),
            subtasks=clean_subtasks(list(subtasks) if isinstance(subtasks, tuple) else subtasks),
            team_id=_clean_team(team_id, owner_id=owner.pk),
        )


def template_create_from_plan(
    *,
    user: User | AnonymousUser,
    plan_id: int,
    name: Any = None,
    team_id: Any = None,
) -> PlanTemplate:
    """Save a plan `user` can read (on the board or in history, finished or not) as their own
    template: its name (or `name`), description, expected outcome and subtasks with their
    profiles; never its states or outcomes."""
    owner = _signed_in(user)
    plan = selectors.plans_visible_to(owner).filter(pk=plan_id).first()
    if plan is None:
        raise PlanError(f"Plan {plan_id} was not found.", code="not_found")
    snapshot = selectors.plan_snapshot_of(plan)
    subtasks = subtasks_from_plan(snapshot)
    with transaction.atomic():
        return PlanTemplate.objects.create(
            owner=owner,
            name=_clean_name(snapshot["name"] if name in (None, "") else name),
            description=snapshot["description"],
            expected_outcome=snapshot["expected_outcome"],
            # The plan's profiles were valid when set: kept, and checked again at start.
            subtasks=clean_subtasks(subtasks, kept_agents=agents_of(subtasks)),
            team_id=_clean_team(team_id, owner_id=owner.pk),
            source_plan=plan,
        )


def template_update(*, template_id: int, user: User | AnonymousUser, **fields: Any) -> PlanTemplate:
    """Change the given fields (`TEMPLATE_FIELDS`; `subtasks` replaces the whole list,
    `team_id` null stops sharing). Profiles the template already names are kept even when
    disabled since; a newly named one must be enabled."""
    editor = _signed_in(user)
    unknown = set(fields) - TEMPLATE_FIELDS
    if unknown:
        raise PlanError(f"Unknown template field(s): {', '.join(sorted(unknown))}.")
    with transaction.atomic():
        found = _visible_template(editor, template_id)
        if not selectors.can_change_template(editor, found.owner_id, "change"):
            raise Forbidden(
                "Only the template's owner, or staff allowed to change templates, edit it."
            )
        template = PlanTemplate.objects.select_for_update().get(pk=found.pk)
        if "name" in fields:
            template.name = _clean_name(fields["name"])
        for text in ("description", "expected_outcome"):
            if text in fields:
                setattr(template, text, _clean_text(fields[text], field=text))
        if "subtasks" in fields:
            template.subtasks = clean_subtasks(
                fields["subtasks"], kept_agents=_stored_agents(template)
            )
        if "team_id" in fields:
            template.team_id = _clean_team(fields["team_id"], owner_id=template.owner_id)
        template.save()
    return template


def template_delete(*, template_id: int, user: User | AnonymousUser) -> None:
    """Remove a template; sessions and plans started from it are not touched."""
    editor = _signed_in(user)
    with transaction.atomic():
        found = _visible_template(editor, template_id)
        if not selectors.can_change_template(editor, found.owner_id, "delete"):
            raise Forbidden(
                "Only the template's owner, or staff allowed to delete templates, delete it."
            )
        PlanTemplate.objects.filter(pk=found.pk).delete()


def session_start_from_template(
    *,
    template_id: int,
    user: User | AnonymousUser,
    title: Any = None,
    need_user_confirm: bool = True,
    language: str = ChatSession.Language.AUTO,
    drop_unavailable_profiles: bool = False,
) -> StartedFromTemplate:
    """A new session of `user` whose current plan is the template's, drafted: version 1, every
    subtask `todo`, no run started (a session that wants a go-ahead still asks for one).

    A subtask naming a profile nobody may use now (removed or disabled) refuses the start and
    says which; with `drop_unavailable_profiles` those subtasks do the session's profile
    instead and the result lists them."""
    starter = _signed_in(user)
    if not isinstance(drop_unavailable_profiles, bool):
        raise PlanError("'drop_unavailable_profiles' must be true or false.")
    template = _visible_template(starter, template_id)
    subtasks = _stored_subtasks(template)
    missing = unavailable_profiles(subtasks)
    if missing and not drop_unavailable_profiles:
        listed = "; ".join(
            f"subtask {position + 1} '{subtasks[position]['name']}' names '{profile}'"
            for position, profile in missing.items()
        )
        raise PlanError(
            f"This template names agent profiles you cannot use now ({listed}). Edit the "
            "template, or start without those profiles (drop_unavailable_profiles) so those "
            "subtasks use the session's profile.",
            code="unavailable_profile",
        )
    with transaction.atomic():
        session = session_create(
            owner=starter,
            title=template.name if title in (None, "") else title,
            need_user_confirm=need_user_confirm,
            language=language,
        )
        plan, _ = plan_create(
            session_id=session.pk,
            actor=Actor.person(starter),
            name=template.name,
            description=template.description,
            expected_outcome=template.expected_outcome,
            subtasks=plan_subtask_specs(subtasks, drop_agents_at=missing),
        )
    return StartedFromTemplate(session=session, plan=plan, dropped_profiles=missing)


def _stored_agents(template: PlanTemplate) -> set[str]:
    """The profiles a stored template names (whatever an older row holds)."""
    items = template.subtasks if isinstance(template.subtasks, list) else []
    return {
        item["agent"]
        for item in items
        if isinstance(item, dict) and isinstance(item.get("agent"), str) and item["agent"]
    }


def _stored_subtasks(template: PlanTemplate) -> list[TemplateSubtask]:
    """The stored list checked against the shape again: a row changed outside the services
    (a data migration, the database shell) starts a plan or fails with a clear message."""
    return clean_subtasks(template.subtasks, kept_agents=_stored_agents(template))
