"""A run's session with the SDK's own server serving the tasks extension
(tests/support/mcp_tasks.py) as its toolset `remote`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents import task_polls
from planboard import services
from planboard.models import ChatSession, Toolset
from tests.support.mcp_revisions import RevisionServer, revision_toolset
from tests.support.mcp_tasks import TaskBoard


@pytest.fixture
def board() -> TaskBoard:
    return TaskBoard()


@pytest.fixture
def server(board: TaskBoard) -> Iterator[RevisionServer]:
    with RevisionServer("modern", extensions=[board]) as running:
        yield running


@pytest.fixture
def remote(staff: Any, server: RevisionServer, session: ChatSession) -> Toolset:
    toolset = revision_toolset(staff, server)
    services.toolset_update(toolset_id=toolset.pk, user=None, tool_policies={"research": "auto"})
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk])
    return toolset


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Polls follow each other at once; how often is not what these tests are about."""
    monkeypatch.setattr(task_polls, "FIRST_POLL_SECONDS", 0.001)
    monkeypatch.setattr(task_polls, "MAX_POLL_SECONDS", 0.01)
