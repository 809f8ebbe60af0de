"""The login session store (SESSION_ENGINE): Django's database store, its every-request read
written out (`sql.login_session_data`).

A signed-in request reads its session before anything else; the ORM compiled that query anew
each time, at about twice the Python of the query itself (a fifteenth of a posted message's
CPU). Writes, expiry and the async reads stay Django's.
"""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore

from planboard import sql


class SessionStore(DatabaseSessionStore):
    def load(self) -> dict[str, Any]:
        data = sql.login_session_data(self.session_key)
        if data is None:
            # As Django's store does: a missing or expired session gets a new key on save.
            self._session_key = None
            return {}
        return self.decode(data)
