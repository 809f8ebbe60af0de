"""Whose session may run, and what someone named to answer it may do: the checks the run and
tool-call services make under the session's lock (docs/INBOX.md, "Trust model of answerers").

An inactive owner's session starts and resumes nothing: a run acts with its owner's rights,
budget and per-person credentials. A person the owner named to answer answers what waits (a
question, a plan's go-ahead, a tool call's approval) and nothing more: starting or steering
work, attaching resources and "always allow" speak for the owner.
"""

from __future__ import annotations

from django.contrib.auth.models import User

from planboard import selectors
from planboard.exceptions import Forbidden, PlanError
from planboard.models import ChatSession

OWNER_INACTIVE = "The session's owner is deactivated: nothing runs in their sessions any more."


def refuse_if_owner_inactive(session: ChatSession, user: User | None = None) -> None:
    """`user`: who asks (no query when it is the owner)."""
    if not selectors.owner_is_active(session.owner_id, known=user):
        raise PlanError(OWNER_INACTIVE, code="owner_inactive")


def check_answer(session: ChatSession, author: User, *, run_waits: bool, attaching: bool) -> None:
    """May `author` write this message? Those who act in the session always; someone named
    to answer only to a run waiting for the user, and only text."""
    if selectors.can_act_in_session(author, session.owner_id):
        return
    if attaching:
        raise Forbidden("An answer is text: only the session's owner attaches resources.")
    if not run_waits:
        raise Forbidden(
            "Someone named to answer this session only answers what the session waits for "
            "(a question, a plan's go-ahead); starting or steering its work is the owner's."
        )


def check_always_allow(session: ChatSession, user: User) -> None:
    """Letting the session's later calls of a tool run unasked ("always allow") is for the
    owner (or staff with `change_chatsession`) to say, not for an answerer."""
    if not selectors.can_act_in_session(user, session.owner_id):
        raise Forbidden(
            "Only the session's owner, or staff allowed to change sessions, may always allow "
            "a tool; approve this call on its own."
        )
