"""The login session store (SESSION_ENGINE) and the user backend: Django's database store and
ModelBackend, their every-request reads written out (`sql.login_session_data`, `sql.user`).

A signed-in request reads its session, then its user, before anything else; the ORM compiled
each query anew, at about twice the Python of the query itself (together a sixth of a posted
message's CPU). Writes, expiry, passwords, permissions and the async reads stay Django's.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from planboard import sql


class SessionStore(DatabaseSessionStore):
    def load(self) -> dict[str, Any]:
        data = sql.login_session_data(self.session_key)
        if data is None:
            # As Django's store does: a missing or expired session gets a new key on save.
            self._session_key = None
            return {}
        return self.decode(data)


class UserBackend(ModelBackend):
    """A signed-in session names the backend that signed it in, and reads its user through it
    on every request: this one (AUTHENTICATION_BACKENDS lists it before Django's, which stays
    for the sessions it signed in)."""

    def get_user(self, user_id: int) -> User | None:
        user = sql.user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            # Django's backend, next in the list, would hash the same password again; Django
            # reports a stop here as the failed sign-in it is (`user_login_failed`).
            raise PermissionDenied
        return user
