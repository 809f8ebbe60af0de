"""Who may see and change what. Every read and write of plans, sessions, toolsets, profiles
and tool-call decisions asks these rules (REST, websockets, web pages, services, admin).

- Members see and change their own sessions and plans; team leads also read those of their
  teams' members.
- Staff powers come from Django's model permissions, exactly as in the admin: an active staff
  member acts on other people's objects only with the matching `view_`/`change_`/`add_`/
  `delete_` permission of that model (`change_` implies `view_`, as in the admin). Being
  staff alone grants nothing beyond what a member has.
- Superusers hold every permission (Django's `has_perm`), but like the admin they act as
  staff only while `is_staff` is set.
- A stdio toolset is a program the workers run with their own OS user's rights: configuring
  one needs `planboard.run_stdio_toolset` on top of add/change, a permission no group gets by
  default.
"""

from __future__ import annotations

from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Exists, Model, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from planboard.models import (
    AgentProfile,
    ChatSession,
    NotificationSettings,
    Plan,
    PlanTemplate,
    SubTask,
    Team,
    TeamMembership,
    ToolCall,
    Toolset,
)

Action = Literal["view", "change", "add", "delete"]
Person = User | AnonymousUser

RUN_STDIO_TOOLSET = "planboard.run_stdio_toolset"


def permission(action: Action, model: type[Model]) -> str:
    """The model permission's full name, as Django's admin checks it: `planboard.change_plan`."""
    return f"{model._meta.app_label}.{action}_{model._meta.model_name}"


def staff_may(user: Person, *perms: str) -> bool:
    """Whether `user` is active staff holding every one of `perms` (superusers hold all)."""
    return bool(
        user.is_authenticated
        and user.is_active
        and user.is_staff
        and all(user.has_perm(perm) for perm in perms)
    )


def staff_may_view(user: Person, model: type[Model]) -> bool:
    """Staff see every row of a model with its `view_` or `change_` permission."""
    return staff_may(user, permission("view", model)) or staff_may(
        user, permission("change", model)
    )


def _owns(user: Person, owner_id: int | None) -> bool:
    return bool(user.is_authenticated and owner_id is not None and user.pk == owner_id)


def _led_member_ids(user: User) -> QuerySet[TeamMembership, int]:
    led_teams = TeamMembership.objects.filter(user=user, role=TeamMembership.Role.LEAD).values(
        "team_id"
    )
    return TeamMembership.objects.filter(team_id__in=led_teams).values_list("user_id", flat=True)


# --- sessions and plans -----------------------------------------------------------------------


def plans_visible_to(user: Person) -> QuerySet[Plan]:
    """Members see their own plans, leads also their teams' members', staff with the plan's
    view (or change) permission every plan."""
    if not isinstance(user, User) or not user.is_authenticated:
        return Plan.objects.none()
    if staff_may_view(user, Plan):
        return Plan.objects.all()
    return Plan.objects.filter(Q(owner=user) | Q(owner_id__in=_led_member_ids(user)))


def _answerable_ids(user: User) -> QuerySet[Any, int]:
    """The sessions whose owners named `user` to answer them (a sub-select, so an owner's
    several answerers never repeat a session row)."""
    rows = ChatSession.answerers.through.objects.filter(user_id=user.pk)
    return rows.values_list("chatsession_id", flat=True)


def sessions_visible_to(user: Person) -> QuerySet[ChatSession]:
    """As `plans_visible_to`, with the chat session's permissions; people the owner named to
    answer a session see it too."""
    if not isinstance(user, User) or not user.is_authenticated:
        return ChatSession.objects.none()
    if staff_may_view(user, ChatSession):
        return ChatSession.objects.all()
    return ChatSession.objects.filter(
        Q(owner=user) | Q(owner_id__in=_led_member_ids(user)) | Q(pk__in=_answerable_ids(user))
    )


def sessions_answerable_by(user: Person) -> QuerySet[ChatSession]:
    """The sessions whose waiting items are `user`'s to answer: their own, and those whose
    owners named them (the inbox lists these). Inactive people answer nothing, and nothing
    of an inactive owner's sessions waits on anyone (they run no more)."""
    if not isinstance(user, User) or not user.is_authenticated or not user.is_active:
        return ChatSession.objects.none()
    return ChatSession.objects.filter(
        Q(owner=user) | Q(pk__in=_answerable_ids(user)), owner__is_active=True
    )


def is_answerer(user: Person, session_id: int) -> bool:
    """Named by the session's owner, both of them active."""
    return bool(
        isinstance(user, User)
        and user.is_authenticated
        and user.is_active
        and ChatSession.answerers.through.objects.filter(
            chatsession_id=session_id, user_id=user.pk, chatsession__owner__is_active=True
        ).exists()
    )


def owner_is_active(owner_id: int | None, *, known: Person | None = None) -> bool:
    """Whether the session owner `owner_id` is active; `known`: a user already loaded (the
    caller, usually the owner: then no query)."""
    if owner_id is None:
        return False
    if isinstance(known, User) and known.pk == owner_id:
        return known.is_active
    return User.objects.filter(pk=owner_id, is_active=True).exists()


def can_change_plan(user: Person, owner_id: int | None) -> bool:
    """The owner, or staff with `change_plan` (its text, and finishing it). Leads only read."""
    return _owns(user, owner_id) or staff_may(user, permission("change", Plan))


def can_change_subtasks(user: Person, owner_id: int | None, action: Action) -> bool:
    """Adding, editing or deleting a plan's subtasks: the owner, or staff who may change the
    plan and `action` its subtasks (what the admin's plan page with its subtask rows needs)."""
    return _owns(user, owner_id) or staff_may(
        user, permission("change", Plan), permission(action, SubTask)
    )


def can_act_in_session(user: Person, owner_id: int | None) -> bool:
    """Changing a session's settings and toolsets, starting its runs and writing into a
    running one, stopping it, "always allow", raising its budget, naming its answerers: the
    owner, or staff with `change_chatsession`."""
    return _owns(user, owner_id) or staff_may(user, permission("change", ChatSession))


def can_edit_board(user: Person, owner_id: int | None) -> bool:
    """Whether the session page and the sockets offer editing: acting in the session and
    changing its plan (the owner always; staff with both permissions)."""
    return can_act_in_session(user, owner_id) and can_change_plan(user, owner_id)


def can_decide_tool_calls(
    user: Person, owner_id: int | None, *, session_id: int | None = None
) -> bool:
    """Approving or denying a session's waiting tool calls: the owner, staff with
    `change_toolcall`, or (given the session) a person the owner named to answer it."""
    return (
        _owns(user, owner_id)
        or staff_may(user, permission("change", ToolCall))
        or (session_id is not None and is_answerer(user, session_id))
    )


def can_answer_session(user: Person, owner_id: int | None, *, session_id: int) -> bool:
    """Answering what the session waits for (a run waiting for the user: confirm or reply; a
    tool's question): whoever may act in the session, or a person the owner named to answer
    it. An answerer does no more than that (`services.message_post` refuses them a new run
    or a message into a running one; "always allow" is the owner's)."""
    return can_act_in_session(user, owner_id) or is_answerer(user, session_id)


# --- plan templates ----------------------------------------------------------------------------


def templates_visible_to(user: Person) -> QuerySet[PlanTemplate]:
    """Owners see their templates, members of a team those shared with it, staff with the
    template's view (or change) permission every one. Sharing is explicit: a lead does not see
    a member's unshared templates."""
    if not isinstance(user, User) or not user.is_authenticated or not user.is_active:
        return PlanTemplate.objects.none()
    if staff_may_view(user, PlanTemplate):
        return PlanTemplate.objects.all()
    teams = TeamMembership.objects.filter(user=user).values("team_id")
    return PlanTemplate.objects.filter(Q(owner=user) | Q(team_id__in=teams))


def can_change_template(user: Person, owner_id: int | None, action: Action = "change") -> bool:
    """Editing (`change`) or deleting (`delete`) a template: its owner, or staff with that
    permission of plan templates. Team members only read and start from it."""
    return _owns(user, owner_id) or staff_may(user, permission(action, PlanTemplate))


# --- consent to be named an answerer -----------------------------------------------------------


def answerer_consent(*, user: User) -> str:
    """Who may name `user` to answer their sessions (`NotificationSettings.NamedBy`)."""
    found = NotificationSettings.objects.filter(user_id=user.pk).values_list("named_by", flat=True)
    return found.first() or NotificationSettings.NamedBy.TEAM


def accepting_answerers(*, owner_id: int, usernames: list[str]) -> list[User]:
    """Of `usernames`, the active people who accept answering `owner_id`'s sessions: anyone,
    or people sharing a team with the owner (the default: without a settings row)."""
    named_by = NotificationSettings.NamedBy
    consent = NotificationSettings.objects.filter(user_id=OuterRef("pk")).values("named_by")[:1]
    teammate = TeamMembership.objects.filter(
        user_id=OuterRef("pk"), team__memberships__user_id=owner_id
    )
    return list(
        User.objects.filter(username__in=usernames, is_active=True)
        .annotate(
            consent=Coalesce(Subquery(consent), Value(named_by.TEAM)), teammate=Exists(teammate)
        )
        .filter(Q(consent=named_by.ANYONE) | Q(consent=named_by.TEAM, teammate=True))
    )


# --- toolsets and agent profiles -----------------------------------------------------------


def sees_toolset_configuration(user: Person) -> bool:
    """Every toolset (disabled ones too) and how it is reached: staff with `view_toolset`."""
    return staff_may_view(user, Toolset)


def may_run_programs(user: Person | None) -> bool:
    """Creating a stdio toolset or changing what it runs (command, args, env, kind)."""
    return user is not None and staff_may(user, RUN_STDIO_TOOLSET)


def sees_profile_configuration(user: Person) -> bool:
    """Every profile (disabled ones too) with its endpoint, key variable, instructions and
    budgets: staff with `view_agentprofile`. Others see name, title, description and model."""
    return staff_may_view(user, AgentProfile)


# --- filter choices ---------------------------------------------------------------------------


def sees_all_teams(user: Person) -> bool:
    return staff_may_view(user, Team)


def owner_choices(user: User) -> list[tuple[str, str]]:
    """Everyone whose plans this user may read, by username."""
    visible = plans_visible_to(user)
    owners = (
        get_user_model()
        .objects.filter(pk__in=visible.values("owner_id"))
        .order_by("username")
        .values_list("pk", "username")
    )
    return [(str(pk), username) for pk, username in owners]


def team_choices(user: User) -> list[tuple[str, str]]:
    """Staff with the team's view permission filter by any team, others by their own teams."""
    teams: QuerySet[Team, Any] = (
        Team.objects.all() if sees_all_teams(user) else Team.objects.filter(memberships__user=user)
    )
    return [(str(pk), name) for pk, name in teams.distinct().values_list("pk", "name")]
