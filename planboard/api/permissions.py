"""Who may see and change what, for the REST API (the websockets use the same selectors).

Members own their sessions and plans; team leads read those of their teams' members; staff
see and change everything. An object the user cannot see is a 404 (its existence is not
revealed); one they can see but not change is a 403.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import NotFound, PermissionDenied

from planboard import selectors
from planboard.models import ChatSession, Plan


def visible_plan(user: Any, plan_id: int) -> Plan:
    plan = selectors.plans_visible_to(user).filter(pk=plan_id).first()
    if plan is None:
        raise NotFound(f"Plan {plan_id} was not found.")
    return plan


def editable_plan(user: Any, plan_id: int) -> Plan:
    # Every edit asks: the owner and admins may edit (and so see) the plan, which one row
    # tells; only for anyone else does visibility decide between 404 and 403.
    found = selectors.rows.plan(plan_id)
    if found is not None and selectors.can_edit(user, found.owner_id):
        return found
    plan = visible_plan(user, plan_id)
    if not selectors.can_edit(user, plan.owner_id):
        raise PermissionDenied(
            "You can read this plan, but only its owner or an admin can change it."
        )
    return plan


def visible_session(user: Any, session_id: int) -> ChatSession:
    session = selectors.sessions_visible_to(user).filter(pk=session_id).first()
    if session is None:
        raise NotFound(f"Session {session_id} was not found.")
    return session


def editable_session(user: Any, session_id: int) -> ChatSession:
    session = visible_session(user, session_id)
    if not selectors.can_edit(user, session.owner_id):
        raise PermissionDenied(
            "You can read this session, but only its owner or an admin can act in it."
        )
    return session
