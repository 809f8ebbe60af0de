"""Open websockets forget people who lost access.

A socket checks visibility when it connects; after that, anything that can take access away
tells the affected sockets to check again (`broadcast.check_access`), and those that may no
longer see their target close with 4403. What can take access away, and who is told:

- a team membership added, changed or removed: the member and everyone in the team (a lead
  sees the members' work, so both sides' visibility changes);
- a user saved (deactivated, staff flag or password changed) or deleted: that user;
- permissions given or taken (a user's own, their groups, a group's permissions, a group
  deleted): the users concerned — staff see others' work through model permissions;
- an API token deleted (revoked, regenerated): its user — sockets opened with it close;
- a logout: that user — cookie sockets of the ended login close at once;
- a chat session or plan deleted: the sockets following it.

These are signals rather than service calls so that no path (admin, shell, cascades) is
missed. They fire on commit: nobody is told about a change that was rolled back.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models import Model
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete
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


# The links that give people permissions: user-group, user-permission, group-permission.
_USER_GROUPS = User.groups.through
_USER_PERMISSIONS = User.user_permissions.through
_GROUP_PERMISSIONS = Group.permissions.through


def _linked_ids(link: type[Model], instance: Model) -> set[int]:
    """The ids on the far side of `instance`'s rows in the link table."""
    near = next(f for f in link._meta.fields if f.related_model is type(instance))
    far = next(f for f in link._meta.fields if f.is_relation and f is not near)
    rows = link._default_manager.filter(**{near.attname: instance.pk})
    return set(rows.values_list(far.attname, flat=True))


def _permission_links_changed(
    sender: type[Model],
    instance: Model,
    action: str,
    reverse: bool,
    pk_set: set[int] | None,
    **kwargs: Any,
) -> None:
    if action not in ("post_add", "post_remove", "pre_clear"):
        return
    # Seen from `instance`: itself, and the rows on the other side (all of them when cleared).
    far = _linked_ids(sender, instance) if action == "pre_clear" else set(pk_set or ())
    if sender is _GROUP_PERMISSIONS:
        group_ids = far if reverse else {instance.pk}
        user_ids = set(
            _USER_GROUPS.objects.filter(group_id__in=group_ids).values_list("user_id", flat=True)
        )
    else:
        user_ids = far if reverse else {instance.pk}
    if user_ids:
        transaction.on_commit(lambda: _tell_users(user_ids))


def _group_deleted(sender: Any, instance: Group, **kwargs: Any) -> None:
    user_ids = set(instance.user_set.values_list("pk", flat=True))
    if user_ids:
        transaction.on_commit(lambda: _tell_users(user_ids))


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
    for n, link in enumerate((_USER_GROUPS, _USER_PERMISSIONS, _GROUP_PERMISSIONS)):
        m2m_changed.connect(_permission_links_changed, sender=link, dispatch_uid=f"{uid}.l{n}")
    pre_delete.connect(_group_deleted, sender=Group, dispatch_uid=f"{uid}.g")
    user_logged_out.connect(_logged_out, dispatch_uid=f"{uid}.logout")
    post_delete.connect(_session_deleted, sender=ChatSession, dispatch_uid=f"{uid}.s")
    post_delete.connect(_plan_deleted, sender=Plan, dispatch_uid=f"{uid}.p")
