"""People with Django model permissions, set up as an administrator would in the admin.

"Staff" alone grants nothing beyond a member's rights (planboard.selectors.access): tests that
mean "an admin" use `admin(...)`, a staff user in a group holding every planboard and agents
model permission except `run_stdio_toolset` (no group gets that one by default); tests about
stdio toolsets use a superuser or `grant(user, RUN_STDIO_TOOLSET)`.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

RUN_STDIO_TOOLSET = "planboard.run_stdio_toolset"
ADMIN_APPS = ("planboard", "agents")


def admin_group() -> Group:
    group, created = Group.objects.get_or_create(name="Planboard administrators")
    if created:
        group.permissions.set(
            Permission.objects.filter(content_type__app_label__in=ADMIN_APPS).exclude(
                codename="run_stdio_toolset"
            )
        )
    return group


def admin(username: str, **fields: Any) -> Any:
    """An active staff user holding the administrators' group."""
    user = get_user_model().objects.create_user(username, is_staff=True, **fields)
    user.groups.add(admin_group())
    return user


def grant(user: Any, *perms: str) -> Any:
    """`user` with these model permissions ("app.codename") added; a fresh copy, since Django
    caches a user's permissions on the instance."""
    for perm in perms:
        app_label, codename = perm.split(".", 1)
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    return get_user_model().objects.get(pk=user.pk)
