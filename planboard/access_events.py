"""Open websockets forget people who lost access.

A socket checks visibility when it connects; after that, anything that can take access away
tells the affected sockets to check again (`broadcast.check_access`), and those that may no
longer see their target close with 4403. What can take access away, and who is told:

- a team membership added, changed or removed: the member and everyone in the team (a lead
  sees the members' work, so both sides' visibility changes);
- a user saved (deactivated, staff flag or password changed) or deleted: that user;
- an API token deleted (revoked, regenerated): its user — sockets opened with it close;
- a logout: that user — cookie sockets of the ended login close at once;
- a chat session or plan deleted: the sockets following it.

These are signals rather than service calls so that no path (admin, shell, cascades) is
missed. They fire on commit: nobody is told about a change that was rolled back.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from rest_framework.authtoken.models import Token

from planboard import broadcast
from planboard.models import ChatSession, Plan, TeamMembership


def _tell_users(user_ids: set[int]) -> None:
    broadcast.check_access([broadcast.user_group(pk) for pk in sorted(user_ids)])


def _membership_changed(sender: Any, instance: TeamMembership, **kwargs: Any) -> None:
    team_id, user_id = instance.team_id, instance.user_id

    def tell() -> None:
        others = set(
            TeamMembership.objects.filter(team_id=team_id).values_list("user_id", flat=True)
        )
        _tell_users({user_id, *others})

    transaction.on_commit(tell)


def _user_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    if kwargs.get("created"):
        return  # a new user has no sockets yet
    user_id = instance.pk
    transaction.on_commit(lambda: _tell_users({user_id}))


def _token_deleted(sender: Any, instance: Token, **kwargs: Any) -> None:
    user_id = instance.user_id
    transaction.on_commit(lambda: _tell_users({user_id}))


def _logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if user is None:
        return
    # Sent before the session is flushed, so the key still names the ending login.
    ended = getattr(getattr(request, "session", None), "session_key", None)
    broadcast.check_access([broadcast.user_group(user.pk)], ended_login=ended)


def _session_deleted(sender: Any, instance: ChatSession, **kwargs: Any) -> None:
    group = broadcast.session_group(instance.pk)
    transaction.on_commit(lambda: broadcast.check_access([group]))


def _plan_deleted(sender: Any, instance: Plan, **kwargs: Any) -> None:
    group = broadcast.plan_group(instance.pk)
    transaction.on_commit(lambda: broadcast.check_access([group]))


def connect() -> None:
    """Called once from the app config's `ready()`."""
    uid = "planboard.access_events"
    post_save.connect(_membership_changed, sender=TeamMembership, dispatch_uid=f"{uid}.m1")
    post_delete.connect(_membership_changed, sender=TeamMembership, dispatch_uid=f"{uid}.m2")
    post_save.connect(_user_changed, sender=settings.AUTH_USER_MODEL, dispatch_uid=f"{uid}.u1")
    post_delete.connect(_user_changed, sender=settings.AUTH_USER_MODEL, dispatch_uid=f"{uid}.u2")
    post_delete.connect(_token_deleted, sender=Token, dispatch_uid=f"{uid}.t")
    user_logged_out.connect(_logged_out, dispatch_uid=f"{uid}.logout")
    post_delete.connect(_session_deleted, sender=ChatSession, dispatch_uid=f"{uid}.s")
    post_delete.connect(_plan_deleted, sender=Plan, dispatch_uid=f"{uid}.p")
