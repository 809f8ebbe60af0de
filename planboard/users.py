"""The user type the code is written against, and the signed-in user of a request.

Planboard uses Django's own user model (no AUTH_USER_MODEL), so services and selectors take
`django.contrib.auth.models.User`: staff flags and memberships are typed, not guessed.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.request import Request


def signed_in(request: HttpRequest | Request) -> User:
    """The request's user, where a view only runs for people who are signed in (behind
    `login_required`, DRF's `IsAuthenticated` or the admin site). Those have already turned
    anonymous requests away; should one get through, refusing it beats acting as nobody."""
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied
    return user
