"""Who may see and change what, for the REST API (the websockets and pages use the same
selectors, `planboard.selectors.access`).

Members own their sessions and plans; team leads read those of their teams' members; staff
act on other people's objects with the matching Django model permission, as in the admin. An
object the user cannot see is a 404 (its existence is not revealed); one they can see but not
change is a 403, and so is a configuration write without its model permission.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Model
from rest_framework.exceptions import NotFound, PermissionDenied

from planboard import selectors
from planboard.models import ChatSession, Plan
from planboard.selectors.access import Action


def visible_plan(user: Any, plan_id: int) -> Plan:
    plan = selectors.plans_visible_to(user).filter(pk=plan_id).first()
    if plan is None:
        raise NotFound(f"Plan {plan_id} was not found.")
    return plan


def editable_plan(user: Any, plan_id: int, *, subtasks: Action | None = None) -> Plan:
    """The plan, if `user` may change it (or, with `subtasks`, add/change/delete its
    subtasks); 404 when they cannot see it, 403 when they only read it."""

    def allowed(owner_id: int) -> bool:
        if subtasks is None:
            return selectors.can_change_plan(user, owner_id)
        return selectors.can_change_subtasks(user, owner_id, subtasks)

    # Every edit asks: the owner may edit (and so see) the plan, which one row tells; only for
    # anyone else does visibility decide between 404 and 403.
    found = selectors.plan_row(plan_id=plan_id)
    if found is not None and allowed(found.owner_id):
        return found
    plan = visible_plan(user, plan_id)
    if not allowed(plan.owner_id):
        raise PermissionDenied(
            "You can read this plan, but only its owner or staff allowed to change plans "
            "(and their subtasks) can change it."
        )
    return plan


def visible_session(user: Any, session_id: int) -> ChatSession:
    session = selectors.sessions_visible_to(user).filter(pk=session_id).first()
    if session is None:
        raise NotFound(f"Session {session_id} was not found.")
    return session


def editable_session(user: Any, session_id: int) -> ChatSession:
    session = visible_session(user, session_id)
    if not selectors.can_act_in_session(user, session.owner_id):
        raise PermissionDenied(
            "You can read this session, but only its owner or staff allowed to change "
            "sessions can act in it."
        )
    return session


def decidable_session(user: Any, session_id: int) -> None:
    """Whether `user` may approve or deny the session's tool calls: the owner, the people
    they named to answer it, or staff with `change_toolcall` (404 when they may neither
    decide nor see the session). "Always allow" asks more (`services.tool_call_decide`)."""
    owner_id = ChatSession.objects.filter(pk=session_id).values_list("owner_id", flat=True)
    if owner_id and selectors.can_decide_tool_calls(user, owner_id[0], session_id=session_id):
        return
    visible_session(user, session_id)
    raise PermissionDenied(
        "You can read this session, but only its owner or staff allowed to change tool calls "
        "can decide them."
    )


def answerable_session(user: Any, session_id: int) -> None:
    """Writing to the agent: whoever may act in the session, or a person its owner named to
    answer it (403 when they may only read it, 404 when they may not see it). Someone named
    only answers what waits: `services.message_post` refuses them anything else (403)."""
    # Nearly every message is the owner's: one row lets them through (the visibility query
    # cost a quarter of a post's CPU); only for anyone else does it decide 404 or 403.
    owner_id = selectors.session_owner_id(session_id=session_id)
    if owner_id is not None and selectors.can_act_in_session(user, owner_id):
        return
    session = visible_session(user, session_id)
    if not selectors.can_answer_session(user, session.owner_id, session_id=session_id):
        raise PermissionDenied(
            "You can read this session, but only its owner, the people they named to answer "
            "it, or staff allowed to change sessions can write to its agent."
        )


def require_model_permission(user: Any, action: Action, model: type[Model]) -> None:
    """Configuration writes (toolsets, agent profiles) need the model permission the admin
    asks for; being staff is not enough."""
    perm = selectors.permission(action, model)
    if not selectors.staff_may(user, perm):
        raise PermissionDenied(
            f"You need the permission {perm!r} to {action} {model._meta.verbose_name_plural} "
            "(ask an administrator)."
        )
