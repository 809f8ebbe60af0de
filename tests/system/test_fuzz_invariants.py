"""The plan invariants every write must keep (shared by the fuzz, fault and security tests),
and tests showing the checks catch a broken plan.

- positions of a plan's subtasks are 0..n-1 without gaps or duplicates;
- at most one subtask of a plan is in progress;
- `Plan.version` equals the number of its events, and the versions are 1..version;
- replaying the event patches from an empty snapshot gives the stored snapshot;
- an unfinished plan is `in_progress` exactly when some subtask has left `todo`;
- a session's current plan, when there is one, is unfinished and belongs to that session.
"""

from __future__ import annotations

from typing import Any

import pytest

from planboard.models import ChatSession, Plan, SubTask
from tests.support.invariants import assert_plan_invariants, assert_session_invariants, fingerprint

# --- the checks catch what they claim to catch ------------------------------------------------


def test_a_plan_made_through_services_passes(plan: Plan, chat_session: ChatSession) -> None:
    assert_session_invariants(chat_session.pk)


def test_a_gap_in_positions_is_caught(plan: Plan) -> None:
    SubTask.objects.filter(plan=plan, position=2).update(position=7)
    with pytest.raises(AssertionError, match="positions"):
        assert_plan_invariants(plan.pk)


def test_a_version_without_event_is_caught(plan: Plan) -> None:
    Plan.objects.filter(pk=plan.pk).update(version=plan.version + 1)
    with pytest.raises(AssertionError, match="event versions"):
        assert_plan_invariants(plan.pk)


def test_a_change_outside_the_log_is_caught(plan: Plan) -> None:
    SubTask.objects.filter(plan=plan, position=0).update(name="edited behind the log's back")
    with pytest.raises(AssertionError, match="replay"):
        assert_plan_invariants(plan.pk)


def test_fingerprint_sees_every_change(plan: Plan, user: Any) -> None:
    before = fingerprint(user.pk)
    SubTask.objects.filter(plan=plan, position=0).update(outcome="x")
    assert fingerprint(user.pk) != before
