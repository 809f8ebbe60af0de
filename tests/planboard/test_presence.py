"""Presence: the in-memory store's time-out (an injected clock, no sleeping), and the session
socket's presence messages through the real ASGI stack (join, edit, leave, access refused)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from planboard import presence
from planboard.models import Plan, TeamMembership
from planboard.presence import MemoryPresenceStore, Presence
from planboard.realtime.presence import PRESENCE_BURST
from tests.support.sockets import (
    ORIGIN,
    TIMEOUT,
    close_code,
    cookie_for,
    first_subtask_id,
    open_socket,
    receive_until,
    run,
    token_for,
)

pytestmark = pytest.mark.django_db(transaction=True)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def entry(key: str, user_id: int = 1, editing: int | None = None) -> Presence:
    return Presence(key=key, user_id=user_id, username=f"u{user_id}", name="Ana", editing=editing)


# --- the in-memory store -----------------------------------------------------------------------


async def test_memory_store_lists_until_the_ttl_passes() -> None:
    clock = Clock()
    store = MemoryPresenceStore(ttl=lambda: 45, clock=clock)
    await store.put(7, entry("a"))
    clock.now += 30
    await store.put(7, entry("b", user_id=2))
    assert [p.key for p in await store.people(7)] == ["a", "b"]
    assert await store.people(8) == []
    clock.now += 15  # a's 45 s are up, b has 15 left
    assert [p.key for p in await store.people(7)] == ["b"]
    clock.now += 29
    assert [p.key for p in await store.people(7)] == ["b"]
    clock.now += 1
    assert await store.people(7) == []


async def test_memory_store_heartbeat_refreshes_and_keeps_the_order() -> None:
    clock = Clock()
    store = MemoryPresenceStore(ttl=lambda: 45, clock=clock)
    await store.put(7, entry("a"))
    await store.put(7, entry("b", user_id=2))
    clock.now += 40
    await store.put(7, entry("a", editing=5))  # a's heartbeat (now editing)
    clock.now += 10
    assert [(p.key, p.editing) for p in await store.people(7)] == [("a", 5)]
    await store.remove(7, "a")
    await store.remove(7, "never-there")
    assert await store.people(7) == []


async def test_memory_store_is_watched_while_an_entry_lives() -> None:
    clock = Clock()
    store = MemoryPresenceStore(ttl=lambda: 45, clock=clock)
    assert not await store.watched(7)
    await store.put(7, entry("a"))
    assert await store.watched(7) and not await store.watched(8)
    clock.now += 45  # no heartbeat came
    assert not await store.watched(7)
    await store.put(7, entry("b"))
    await store.remove(7, "b")
    assert not await store.watched(7)


def test_presence_round_trips_through_its_dict() -> None:
    person = entry("k", editing=3)
    assert Presence.from_dict(person.as_dict()) == person


def test_store_is_memory_without_redis(settings: Any) -> None:
    settings.REDIS_URL = ""
    presence.set_store(None)
    try:
        assert isinstance(presence.store(), MemoryPresenceStore)
    finally:
        presence.set_store(None)


# --- the session socket ------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def fresh_store() -> Iterator[MemoryPresenceStore]:
    store = MemoryPresenceStore()
    presence.set_store(store)
    yield store
    presence.set_store(None)


async def follow(plan: Plan, auth: tuple[bytes, bytes]) -> WebsocketCommunicator:
    socket = await open_socket(f"/ws/sessions/{plan.session_id}/", ORIGIN, auth)
    assert (await socket.receive_json_from(timeout=TIMEOUT))["type"] == "snapshot"
    return socket


async def join(socket: WebsocketCommunicator) -> dict[str, Any]:
    await socket.send_json_to({"type": "presence.join"})
    messages = await receive_until(socket, lambda m: m["type"] == "presence")
    return messages[-1]


def of_type(kind: str) -> Any:
    return lambda m: m.get("type") == kind


async def test_join_lists_everyone_and_tells_the_others(
    user: Any, lead: Any, plan: Plan, fresh_store: MemoryPresenceStore
) -> None:
    alice = await follow(plan, await cookie_for(user))
    first = await join(alice)
    assert [p["username"] for p in first["people"]] == ["alice"]
    assert first["heartbeat_seconds"] == presence.HEARTBEAT_SECONDS
    assert first["session_id"] == plan.session_id

    lena = await follow(plan, await cookie_for(lead))
    listed = await join(lena)
    assert [p["username"] for p in listed["people"]] == ["alice", "lena"]
    update = (await receive_until(alice, of_type("presence.update")))[-1]
    if update["person"]["username"] == "alice":  # alice's own join came back to her first
        update = (await receive_until(alice, of_type("presence.update")))[-1]
    assert update["person"]["username"] == "lena"
    assert update["person"]["name"] == "lena"
    assert update["person"]["editing"] is None
    key = update["person"]["key"]

    # Closing the page: the entry goes and alice hears it.
    await lena.disconnect()
    left = (await receive_until(alice, of_type("presence.left")))[-1]
    assert left == {"type": "presence.left", "session_id": plan.session_id, "key": key}
    assert [p.username for p in await fresh_store.people(plan.session_id)] == ["alice"]
    await alice.disconnect()
    assert await fresh_store.people(plan.session_id) == []


async def test_editing_a_card_is_announced_and_cleared(user: Any, lead: Any, plan: Plan) -> None:
    subtask_id = await run(first_subtask_id, plan.pk)
    lena = await follow(plan, await cookie_for(lead))
    await join(lena)
    alice = await follow(plan, await token_for(user))
    await join(alice)
    await alice.send_json_to({"type": "presence.editing", "subtask_id": subtask_id})
    editing = (
        await receive_until(
            lena, lambda m: m["type"] == "presence.update" and m["person"]["editing"] is not None
        )
    )[-1]
    assert editing["person"]["username"] == "alice"
    assert editing["person"]["editing"] == subtask_id
    # A heartbeat's list carries it too.
    await lena.send_json_to({"type": "presence.heartbeat"})
    listed = (await receive_until(lena, of_type("presence")))[-1]
    assert {p["username"]: p["editing"] for p in listed["people"]} == {
        "lena": None,
        "alice": subtask_id,
    }
    await alice.send_json_to({"type": "presence.editing", "subtask_id": None})
    cleared = (
        await receive_until(
            lena,
            lambda m: (
                m["type"] == "presence.update"
                and m["person"]["username"] == "alice"
                and m["person"]["editing"] is None
            ),
        )
    )[-1]
    assert cleared["person"]["key"] == editing["person"]["key"]
    # An explicit leave.
    await alice.send_json_to({"type": "presence.leave"})
    await receive_until(lena, of_type("presence.left"))
    await alice.disconnect()
    await lena.disconnect()


async def test_readers_cannot_claim_a_card_and_bad_ids_are_refused(lead: Any, plan: Plan) -> None:
    lena = await follow(plan, await cookie_for(lead))  # a lead reviews read-only
    await join(lena)
    await lena.send_json_to({"type": "presence.editing", "subtask_id": 1})
    assert (await receive_until(lena, of_type("error")))[-1]["code"] == "read_only"
    for bad in ("1", True, -3, 2**70, [1]):
        await lena.send_json_to({"type": "presence.editing", "subtask_id": bad})
        assert (await receive_until(lena, of_type("error")))[-1]["code"] == "bad_subtask"
    await lena.send_json_to({"type": "presence.dance"})
    assert (await receive_until(lena, of_type("error")))[-1]["code"] == "unknown_message"
    await lena.disconnect()


async def test_presence_messages_are_rate_limited(user: Any, plan: Plan) -> None:
    alice = await follow(plan, await cookie_for(user))
    for _ in range(PRESENCE_BURST + 5):
        await alice.send_json_to({"type": "presence.heartbeat"})
    messages = await receive_until(
        alice, lambda m: m["type"] == "error" and m["code"] == "rate_limited"
    )
    assert sum(m["type"] == "presence" for m in messages) <= PRESENCE_BURST
    await alice.disconnect()


async def test_someone_refused_is_never_present(
    user: Any, other_user: Any, plan: Plan, fresh_store: MemoryPresenceStore
) -> None:
    alice = await follow(plan, await cookie_for(user))
    await join(alice)
    mallory = await open_socket(
        f"/ws/sessions/{plan.session_id}/", ORIGIN, await cookie_for(other_user)
    )
    assert await close_code(mallory) == 4404
    # Even a message sent before the close is processed joins nothing.
    await mallory.send_json_to({"type": "presence.join"})
    await mallory.send_json_to({"type": "presence.editing", "subtask_id": None})
    await mallory.disconnect()
    assert [p.username for p in await fresh_store.people(plan.session_id)] == ["alice"]
    # alice hears of nobody else: her next heartbeat lists herself only.
    await alice.send_json_to({"type": "presence.heartbeat"})
    messages = await receive_until(alice, of_type("presence"))
    others = [m for m in messages if m["type"].startswith("presence.")]
    assert all(m["person"]["username"] == "alice" for m in others)
    assert [p["username"] for p in messages[-1]["people"]] == ["alice"]
    await alice.disconnect()


async def test_losing_access_leaves(
    user: Any, lead: Any, plan: Plan, fresh_store: MemoryPresenceStore
) -> None:
    alice = await follow(plan, await cookie_for(user))
    await join(alice)
    lena = await follow(plan, await cookie_for(lead))
    await join(lena)
    await receive_until(
        alice, lambda m: m["type"] == "presence.update" and m["person"]["username"] == "lena"
    )
    await run(lambda: TeamMembership.objects.filter(user=lead).delete())
    output = await lena.receive_output(timeout=TIMEOUT)
    while output["type"] != "websocket.close":
        output = await lena.receive_output(timeout=TIMEOUT)
    assert output["code"] == 4403
    await receive_until(alice, of_type("presence.left"))
    assert [p.username for p in await fresh_store.people(plan.session_id)] == ["alice"]
    await alice.disconnect()
