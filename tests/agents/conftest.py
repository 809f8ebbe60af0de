"""Fixtures of the agent tests (the scripted model and the test servers are plugins listed in
tests/conftest.py; users, `chat_session` and `plan` are there too)."""

from __future__ import annotations

from typing import Any

import pytest

from planboard import services
from planboard.models import ChatSession
from planboard.services import Actor


@pytest.fixture
def session(user: Any) -> ChatSession:
    """Alice's session whose agent goes ahead without asking her to confirm its plan (unlike
    `chat_session`, which keeps the default and asks)."""
    return services.session_create(owner=user, title="Trip", need_user_confirm=False)


@pytest.fixture
def agent(chat_session: ChatSession, user: Any) -> Actor:
    """The agent acting through a real (queued) run of `chat_session`."""
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    return Actor.agent(run)
