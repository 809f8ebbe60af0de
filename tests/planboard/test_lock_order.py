"""One lock order everywhere (session, plans by id, subtasks, runs): every plan-changing
operation of people and of the agent, mixed at random in concurrent threads on PostgreSQL,
never deadlocks, and each plan's event log still replays to its snapshot."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

from django.contrib.auth import get_user_model
from django.db import OperationalError, transaction

from agents import tools
from planboard import selectors, services
from planboard.exceptions import PlanError
from planboard.models import ChatSession, Plan, PlanEvent
from planboard.services import Actor
from planboard.snapshots import apply_event
from tests.support import db

THREADS = 4
OPERATIONS = 40


def _current(session_id: int) -> dict[str, Any] | None:
    plan_id = ChatSession.objects.filter(pk=session_id).values_list("current_plan_id", flat=True)
    return selectors.plan_snapshot(plan_id=plan_id[0]) if plan_id and plan_id[0] else None


def _operations(
    session_id: int, person: Actor, agent: Actor, run_id: int, owner: Any
) -> list[Callable[[random.Random], Any]]:
    def tool(tool_name: str, /, **arguments: Any) -> str:
        return tools.execute_tool_call(
            session_id=session_id, actor=agent, name=tool_name, arguments=arguments
        )

    def agent_create_plan(rng: random.Random) -> Any:
        return tool(
            "create_plan",
            name=f"Plan {rng.randrange(1000)}",
            description="d",
            expected_outcome="e",
            subtasks=[{"name": f"s{i}"} for i in range(3)],
        )

    def agent_add(rng: random.Random) -> Any:
        return tool("revise_current_plan", subtask_idx=0, action="add", subtask={"name": "a"})

    def agent_start_and_finish(rng: random.Random) -> Any:
        tool("update_subtask_state", subtask_idx=0, state="in_progress")
        return tool("finish_subtask", subtask_idx=0, subtask_outcome="ok")

    def agent_recover(rng: random.Random) -> Any:
        old = Plan.objects.filter(session_id=session_id).order_by("?").first()
        return tool("recover_historical_plan", plan_id=old.pk) if old else None

    def person_patch_plan(rng: random.Random) -> Any:
        # The reported deadlock: text and state together in one request.
        plan = _current(session_id)
        if plan is None:
            return None
        return services.plan_change(
            plan_id=plan["id"],
            actor=person,
            texts={"description": f"edited {rng.randrange(1000)}"},
            state="abandoned" if rng.random() < 0.3 else None,
            outcome="stopped by a person",
        )

    def person_change_subtask(rng: random.Random) -> Any:
        plan = _current(session_id)
        if plan is None or not plan["subtasks"]:
            return None
        target = rng.choice(plan["subtasks"])
        return services.subtask_change(
            plan_id=plan["id"],
            actor=person,
            subtask_id=target["id"],
            texts={"name": f"n{rng.randrange(1000)}"},
            state=rng.choice(["todo", "in_progress", "abandoned"]),
            index=0,
        )

    def person_delete(rng: random.Random) -> Any:
        plan = _current(session_id)
        if plan is None or not plan["subtasks"]:
            return None
        target = rng.choice(plan["subtasks"])
        return services.subtask_delete(plan_id=plan["id"], actor=person, subtask_id=target["id"])

    def person_writes_and_cancels(rng: random.Random) -> Any:
        services.message_post(session_id=session_id, author=owner, content="and also…")
        return services.run_cancel(session_id=session_id) if rng.random() < 0.2 else None

    def usage_is_counted(rng: random.Random) -> Any:
        plan = _current(session_id)
        with transaction.atomic():
            return services.run_record_step(
                run_id=run_id,
                prompt_tokens=10,
                completion_tokens=5,
                cost_usd=0.001,
                plan_id=plan["id"] if plan else None,
                subtask_id=plan["subtasks"][0]["id"] if plan and plan["subtasks"] else None,
            )

    return [
        agent_create_plan,
        agent_add,
        agent_start_and_finish,
        agent_recover,
        person_patch_plan,
        person_change_subtask,
        person_delete,
        person_writes_and_cancels,
        usage_is_counted,
    ]


def test_mixed_operations_never_deadlock(postgres: None) -> None:
    owner = get_user_model().objects.create_user("racer")
    person = Actor.person(owner)
    session = services.session_create(owner=owner)
    services.plan_create(
        session_id=session.pk, actor=person, name="Start", subtasks=[{"name": "first"}]
    )
    _, run = services.message_post(session_id=session.pk, author=owner, content="Go")
    agent = Actor.agent(run)
    operations = _operations(session.pk, person, agent, run.pk, owner)
    failures: list[BaseException] = []
    done = [0]

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(OPERATIONS):
                try:
                    rng.choice(operations)(rng)
                except PlanError:
                    pass  # a refused change (stale version, broken rule) is fine; a deadlock isn't
                done[0] += 1
        except BaseException as exc:
            failures.append(exc)
        finally:
            db.close_thread_connections()

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not [t for t in threads if t.is_alive()], "a worker hung"
    assert not failures, failures
    assert done[0] == THREADS * OPERATIONS

    for plan in Plan.objects.filter(session=session):
        final = selectors.plan_snapshot(plan_id=plan.pk)
        versions = list(PlanEvent.objects.filter(plan=plan).values_list("version", flat=True))
        assert versions == list(range(1, final["version"] + 1))
        replay: dict[str, Any] = {"version": 0, "subtasks": []}
        for event in selectors.plan_events_since(plan_id=plan.pk, version=0):
            replay = apply_event(replay, event)
        assert replay == final


def test_a_plan_lock_does_not_lock_its_owner_row(postgres: None) -> None:
    """Row locks stay on the rows meant: a plan write must not block the owner's account."""
    owner = get_user_model().objects.create_user("owner")
    person = Actor.person(owner)
    session = services.session_create(owner=owner)
    plan, _ = services.plan_create(session_id=session.pk, actor=person, name="P")
    holding = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []

    def hold_the_plan_lock() -> None:
        try:
            with transaction.atomic():
                services.plan_update_info(plan_id=plan.pk, actor=person, name="Q")
                holding.set()
                release.wait(30)
        except BaseException as exc:
            errors.append(exc)
        finally:
            db.close_thread_connections()

    thread = threading.Thread(target=hold_the_plan_lock)
    thread.start()
    assert holding.wait(30)
    other = db.second_connection()
    try:
        with other.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
            # A user row locked by the plan lock would make this wait, then fail.
            cursor.execute("UPDATE auth_user SET last_login = now() WHERE id = %s", [owner.pk])
    except OperationalError as exc:  # pragma: no cover - the failure this test is about
        raise AssertionError(f"the owner's row was locked by a plan write: {exc}") from exc
    finally:
        other.close()
        release.set()
        thread.join(30)
    assert not errors, errors
