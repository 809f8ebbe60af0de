"""Subtask dependencies (`blocked_by`): set through the services, refused when they would make a
circle, followed by the agent's order rule and by `subtask_finish`, dropped with a deleted
subtask, replayed from the history."""

from __future__ import annotations

import json
from typing import Any

import pytest

from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import AgentRun, ChatSession, Plan, PlanEvent, SubTask
from planboard.services import Actor
from planboard.snapshots import apply_event, snapshot_before

pytestmark = pytest.mark.django_db


def ids(plan: Plan) -> list[int]:
    return [s["id"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]


def blocked(plan: Plan) -> list[list[int]]:
    return [s["blocked_by"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]


def states(plan: Plan) -> list[str]:
    return [s["state"] for s in selectors.plan_snapshot(plan_id=plan.pk)["subtasks"]]


def rows() -> list[tuple[Any, ...]]:
    return list(SubTask.objects.order_by("id").values_list("id", "position", "state", "blocked_by"))


@pytest.fixture
def agent(chat_session: ChatSession) -> Actor:
    return Actor.agent(AgentRun.objects.create(session=chat_session))


def wait(plan: Plan, actor: Actor, who: int, on: list[int]) -> None:
    """Subtask at index `who` waits for those at indices `on`."""
    order = ids(plan)
    services.subtask_update(
        plan_id=plan.pk, actor=actor, subtask_id=order[who], blocked_by=[order[i] for i in on]
    )


class TestSetting:
    def test_stored_as_ids_in_board_order_without_duplicates(
        self, plan: Plan, actor: Actor
    ) -> None:
        a, b, c = ids(plan)
        changes = services.subtask_update(
            plan_id=plan.pk, actor=actor, subtask_id=c, blocked_by=[b, a, b]
        )
        assert changes == {"blocked_by": ([], [a, b])}
        assert blocked(plan) == [[], [], [a, b]]
        event = PlanEvent.objects.filter(plan=plan).latest("version")
        assert event.action == "subtask_updated"
        assert (event.before, event.after) == (
            {"index": 2, "blocked_by": []},
            {"index": 2, "blocked_by": [a, b]},
        )
        # Setting the same list again changes nothing and records nothing.
        version = Plan.objects.get(pk=plan.pk).version
        assert (
            services.subtask_update(plan_id=plan.pk, actor=actor, subtask_id=c, blocked_by=[a, b])
            == {}
        )
        assert Plan.objects.get(pk=plan.pk).version == version

    def test_cleared_with_an_empty_list(self, plan: Plan, actor: Actor) -> None:
        wait(plan, actor, 2, [0])
        services.subtask_update(
            plan_id=plan.pk, actor=actor, subtask_id=ids(plan)[2], blocked_by=[]
        )
        assert blocked(plan) == [[], [], []]

    @pytest.mark.parametrize(
        ("value", "fragment"),
        [
            ("1", "must be a list"),
            ([True], "whole numbers"),
            ([0], "whole numbers"),
            ([2**63], "whole numbers"),
            ([10**9], "not part of this plan"),
        ],
    )
    def test_bad_lists_refused_and_nothing_changes(
        self, plan: Plan, actor: Actor, value: Any, fragment: str
    ) -> None:
        before = (rows(), Plan.objects.get(pk=plan.pk).version)
        with pytest.raises(PlanError, match=fragment):
            services.subtask_update(
                plan_id=plan.pk, actor=actor, subtask_id=ids(plan)[1], blocked_by=value
            )
        assert (rows(), Plan.objects.get(pk=plan.pk).version) == before

    def test_another_plans_subtask_is_refused(self, plan: Plan, actor: Actor, user: Any) -> None:
        other_session = services.session_create(owner=user, title="Other")
        other, _ = services.plan_create(
            session_id=other_session.pk, actor=actor, name="Other", subtasks=[{"name": "x"}]
        )
        with pytest.raises(PlanError, match="not part of this plan"):
            services.subtask_update(
                plan_id=plan.pk, actor=actor, subtask_id=ids(plan)[0], blocked_by=ids(other)
            )

    def test_self_reference_refused(self, plan: Plan, actor: Actor) -> None:
        me = ids(plan)[1]
        with pytest.raises(PlanError, match="cannot wait for itself") as caught:
            services.subtask_update(plan_id=plan.pk, actor=actor, subtask_id=me, blocked_by=[me])
        assert caught.value.code == "blocked_by_self"
        assert blocked(plan) == [[], [], []]

    def test_cycles_refused_naming_the_circle(self, plan: Plan, actor: Actor) -> None:
        wait(plan, actor, 1, [0])  # 1 waits for 0
        wait(plan, actor, 2, [1])  # 2 waits for 1
        before = rows()
        with pytest.raises(PlanError) as caught:
            wait(plan, actor, 0, [2])  # 0 waits for 2: 0 → 2 → 1 → 0
        assert caught.value.code == "blocked_by_cycle"
        assert "subtask 0 ('Book flights') → subtask 2 ('Plan days') → subtask 1" in str(
            caught.value.message
        )
        assert rows() == before
        with pytest.raises(PlanError, match="circle"):
            wait(plan, actor, 0, [1])  # the two-subtask circle

    def test_added_subtask_waits_and_bad_blockers_add_nothing(
        self, plan: Plan, actor: Actor
    ) -> None:
        a, b, _ = ids(plan)
        added = services.subtask_add(plan_id=plan.pk, actor=actor, name="Pack", blocked_by=[b, a])
        assert added.blocked_by == [a, b]
        event = PlanEvent.objects.filter(plan=plan).latest("version")
        assert event.after is not None and event.after["blocked_by"] == [a, b]
        count = SubTask.objects.count()
        with pytest.raises(PlanError, match="not part of this plan"):
            services.subtask_add(plan_id=plan.pk, actor=actor, name="Nope", blocked_by=[10**9])
        assert SubTask.objects.count() == count

    def test_plan_create_takes_indices_and_stores_ids(
        self, chat_session: ChatSession, actor: Actor
    ) -> None:
        plan, _ = services.plan_create(
            session_id=chat_session.pk,
            actor=actor,
            name="P",
            subtasks=[
                {"name": "a"},
                {"name": "b", "blocked_by": [0]},
                {"name": "c", "blocked_by": [1, 0]},
            ],
        )
        a, b, _ = ids(plan)
        assert blocked(plan) == [[], [a], [a, b]]
        created = PlanEvent.objects.get(plan=plan)
        assert [s["blocked_by"] for s in created.patch["upsert"]] == [[], [a], [a, b]]

    @pytest.mark.parametrize(
        ("subtasks", "fragment"),
        [
            ([{"name": "a", "blocked_by": [0]}], "cannot wait for itself"),
            ([{"name": "a", "blocked_by": [1]}, {"name": "b", "blocked_by": [0]}], "circle"),
            ([{"name": "a", "blocked_by": [5]}], "has 1 subtasks"),
            ([{"name": "a", "blocked_by": [-1]}], "whole numbers"),
            ([{"name": "a", "blocked_by": "0"}], "must be a list"),
        ],
    )
    def test_plan_create_refuses_bad_indices(
        self, chat_session: ChatSession, actor: Actor, subtasks: list[Any], fragment: str
    ) -> None:
        plans = Plan.objects.count()
        with pytest.raises(PlanError, match=fragment):
            services.plan_create(
                session_id=chat_session.pk, actor=actor, name="P", subtasks=subtasks
            )
        assert Plan.objects.count() == plans


class TestDeletion:
    def test_a_deleted_subtask_leaves_the_lists(self, plan: Plan, actor: Actor) -> None:
        a, b, c = ids(plan)
        wait(plan, actor, 1, [0])
        wait(plan, actor, 2, [0, 1])
        services.subtask_delete(plan_id=plan.pk, actor=actor, subtask_id=a)
        assert blocked(plan) == [[], [b]]
        event = PlanEvent.objects.filter(plan=plan).latest("version")
        # The same change tells the board: those that waited for it are in the patch.
        assert {s["id"]: s["blocked_by"] for s in event.patch["upsert"]} == {b: [], c: [b]}


class TestAgentOrder:
    def test_without_dependencies_the_earlier_subtasks_rule_stays(
        self, plan: Plan, agent: Actor
    ) -> None:
        with pytest.raises(PlanError) as caught:
            services.subtask_set_state(
                plan_id=plan.pk,
                actor=agent,
                subtask_id=ids(plan)[1],
                state="in_progress",
                in_order=True,
            )
        assert caught.value.code == "order"

    def test_with_dependencies_position_no_longer_blocks(
        self, plan: Plan, actor: Actor, agent: Actor
    ) -> None:
        wait(plan, actor, 1, [0])
        services.subtask_set_state(
            plan_id=plan.pk,
            actor=agent,
            subtask_id=ids(plan)[2],
            state="in_progress",
            in_order=True,
        )
        assert states(plan) == ["todo", "todo", "in_progress"]

    def test_the_agent_cannot_start_a_blocked_subtask(
        self, plan: Plan, actor: Actor, agent: Actor
    ) -> None:
        wait(plan, actor, 2, [0, 1])
        services.subtask_set_state(
            plan_id=plan.pk, actor=actor, subtask_id=ids(plan)[1], state="abandoned"
        )
        before = rows()
        with pytest.raises(PlanError) as caught:
            services.subtask_set_state(
                plan_id=plan.pk,
                actor=agent,
                subtask_id=ids(plan)[2],
                state="in_progress",
                in_order=True,
            )
        assert caught.value.code == "blocked"
        # Names what blocks it (the abandoned one no longer does).
        assert "blocked by subtask 0 ('Book flights'), which is not done" in caught.value.message
        assert "Book hotel" not in caught.value.message
        assert rows() == before
        with pytest.raises(PlanError, match="blocked by"):
            services.subtask_finish(
                plan_id=plan.pk, actor=agent, subtask_id=ids(plan)[2], outcome="x"
            )

    def test_people_may_start_a_blocked_subtask(self, plan: Plan, actor: Actor) -> None:
        wait(plan, actor, 2, [0])
        services.subtask_set_state(
            plan_id=plan.pk, actor=actor, subtask_id=ids(plan)[2], state="in_progress"
        )
        assert states(plan) == ["todo", "todo", "in_progress"]

    def test_finish_starts_the_first_unblocked_todo_in_board_order(
        self, plan: Plan, actor: Actor, agent: Actor
    ) -> None:
        a, b, c = ids(plan)
        services.subtask_add(plan_id=plan.pk, actor=actor, name="Pack")  # index 3, waits for none
        wait(plan, actor, 1, [2])  # b waits for c
        wait(plan, actor, 2, [0])  # c waits for a
        services.subtask_set_state(
            plan_id=plan.pk, actor=agent, subtask_id=a, state="in_progress", in_order=True
        )
        done = services.subtask_finish(plan_id=plan.pk, actor=agent, subtask_id=a, outcome="ok")
        # b comes first in board order but still waits for c; c's blocker is done now.
        assert done.started is not None and done.started.pk == c
        done = services.subtask_finish(plan_id=plan.pk, actor=agent, subtask_id=c, outcome="ok")
        assert done.started is not None and done.started.pk == b
        event = PlanEvent.objects.filter(plan=plan).latest("version")
        assert event.after is not None and event.after["started_next"] == 1

    def test_finish_starts_an_earlier_unblocked_todo(
        self, plan: Plan, actor: Actor, agent: Actor
    ) -> None:
        a, b, c = ids(plan)
        wait(plan, actor, 0, [2])  # a waits for c: c may go first
        services.subtask_set_state(
            plan_id=plan.pk, actor=agent, subtask_id=b, state="in_progress", in_order=True
        )
        done = services.subtask_finish(plan_id=plan.pk, actor=agent, subtask_id=b, outcome="ok")
        assert done.started is not None and done.started.pk == c
        done = services.subtask_finish(plan_id=plan.pk, actor=agent, subtask_id=c, outcome="ok")
        assert done.started is not None and done.started.pk == a


def test_history_replays_to_the_snapshot(plan: Plan, actor: Actor) -> None:
    wait(plan, actor, 2, [0, 1])
    services.subtask_add(plan_id=plan.pk, actor=actor, name="Pack", blocked_by=[ids(plan)[2]])
    services.subtask_delete(plan_id=plan.pk, actor=actor, subtask_id=ids(plan)[0])
    events = selectors.plan_events_since(plan_id=plan.pk, version=0)
    replayed = snapshot_before(events[0])
    for event in events:
        replayed = apply_event(replayed, event)
    assert replayed == selectors.plan_snapshot(plan_id=plan.pk)


class TestRest:
    """PATCH and POST carry `blocked_by` (ids) to the same services; refusals are 400s."""

    @pytest.fixture
    def api(self, user: Any) -> Any:
        from rest_framework.test import APIClient

        client = APIClient()
        client.force_authenticate(user)
        return client

    def test_patch_sets_and_clears_blockers(self, api: Any, plan: Plan) -> None:
        a, b, c = ids(plan)
        url = f"/api/plans/{plan.pk}/subtasks/{c}/"
        response = api.patch(url, {"blocked_by": [b, a]}, format="json")
        assert response.status_code == 200, response.json()
        assert response.json()["plan"]["subtasks"][2]["blocked_by"] == [a, b]
        response = api.patch(url, {"blocked_by": []}, format="json")
        assert response.json()["plan"]["subtasks"][2]["blocked_by"] == []

    @pytest.mark.parametrize(
        ("body", "fragment"),
        [
            ({"blocked_by": ["1"]}, "whole number"),
            ({"blocked_by": 3}, "list"),
            ({"blocked_by": [0]}, "greater than or equal to 1"),
        ],
    )
    def test_patch_refuses_bad_shapes(self, api: Any, plan: Plan, body: Any, fragment: str) -> None:
        response = api.patch(f"/api/plans/{plan.pk}/subtasks/{ids(plan)[2]}/", body, format="json")
        assert response.status_code == 400
        assert fragment in json.dumps(response.json())
        assert blocked(plan) == [[], [], []]

    def test_cycles_and_self_references_are_400_and_change_nothing(
        self, api: Any, plan: Plan, actor: Actor
    ) -> None:
        a, b, _ = ids(plan)
        wait(plan, actor, 1, [0])
        version = Plan.objects.get(pk=plan.pk).version
        response = api.patch(
            f"/api/plans/{plan.pk}/subtasks/{a}/", {"blocked_by": [b]}, format="json"
        )
        assert response.status_code == 400
        assert response.json()["code"] == "blocked_by_cycle"
        response = api.patch(
            f"/api/plans/{plan.pk}/subtasks/{a}/", {"blocked_by": [a]}, format="json"
        )
        assert response.json()["code"] == "blocked_by_self"
        assert Plan.objects.get(pk=plan.pk).version == version

    def test_post_adds_a_waiting_subtask(self, api: Any, plan: Plan) -> None:
        a = ids(plan)[0]
        response = api.post(
            f"/api/plans/{plan.pk}/subtasks/", {"name": "Pack", "blocked_by": [a]}, format="json"
        )
        assert response.status_code == 201, response.json()
        assert response.json()["plan"]["subtasks"][3]["blocked_by"] == [a]

    def test_schema_documents_the_field(self, api: Any) -> None:
        schema = api.get("/api/schema/", {"format": "json"}).json()
        components = schema["components"]["schemas"]
        assert components["SubtaskSnapshot"]["properties"]["blocked_by"]["type"] == "array"
        assert "blocked_by" in components["PatchedSubtaskUpdate"]["properties"]
        assert "blocked_by" in components["SubtaskCreate"]["properties"]
