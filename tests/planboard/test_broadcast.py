"""planboard.broadcast: the synchronous Redis publisher speaks channels_redis's pub/sub wire
format (checked against the real layer, so an upgrade that changes it fails here), each event
is encoded once, and a broadcast that cannot reach Redis never fails the write."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from channels.layers import get_channel_layer

from planboard import broadcast

EVENT = {"type": "plan.event", "plan_id": 7, "version": 3, "note": "Kyoto 京都 <b>&</b>"}


@pytest.fixture
def pubsub_layer(settings: Any, redis_url: str) -> Iterator[Any]:
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            # A prefix of its own: concurrent runs on one Redis never share groups.
            "CONFIG": {"hosts": [redis_url], "prefix": f"pb-test-{uuid.uuid4().hex[:12]}"},
        }
    }
    yield get_channel_layer()


def test_an_event_is_encoded_once_as_compact_json_with_its_type() -> None:
    message = broadcast.encode_event(EVENT)
    assert message["type"] == "broadcast" and message["kind"] == "plan.event"
    assert json.loads(message["text"]) == EVENT
    assert "京都" in message["text"] and ", " not in message["text"]


@pytest.mark.redis
def test_synchronous_publish_reaches_every_group_through_the_real_layer(
    pubsub_layer: Any,
) -> None:
    async def follow_and_publish() -> list[Any]:
        plan_follower = await pubsub_layer.new_channel()
        session_follower = await pubsub_layer.new_channel()
        bystander = await pubsub_layer.new_channel()
        await pubsub_layer.group_add("plan.7", plan_follower)
        await pubsub_layer.group_add("session.5", session_follower)
        await pubsub_layer.group_add("plan.8", bystander)
        # From a worker thread, as services do on commit: both groups in one pipeline.
        await asyncio.to_thread(broadcast.publish, ["plan.7", "session.5"], EVENT)
        await asyncio.to_thread(broadcast.check_access, ["plan.8"], ended_login="abc")
        received = [
            await asyncio.wait_for(pubsub_layer.receive(channel), 10)
            for channel in (plan_follower, session_follower, bystander)
        ]
        await pubsub_layer.flush()
        return received

    # The layer lives on its own event loop in its own thread, like a web process's.
    with ThreadPoolExecutor(1) as pool:
        received = pool.submit(asyncio.run, follow_and_publish()).result(timeout=60)
    expected = broadcast.encode_event(EVENT)
    assert received == [
        expected,
        expected,
        {"type": "access.check", "ended_login": "abc"},
    ]


def test_publishing_without_redis_logs_and_returns(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"]},  # nothing listens on port 1
        }
    }
    seen: list[tuple[str, dict[str, Any]]] = []
    unsubscribe = broadcast.subscribe(lambda group, event: seen.append((group, event)))
    try:
        with caplog.at_level(logging.WARNING, logger="planboard.broadcast"):
            broadcast.publish(["plan.1"], EVENT)
    finally:
        unsubscribe()
    assert "clients will resync" in caplog.text
    # In-process listeners (the embedded worker's streams) still heard it.
    assert seen == [("plan.1", EVENT)]


def test_a_batch_leaves_in_one_round_trip_in_order_through_the_real_layer(
    pubsub_layer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    second = {**EVENT, "version": 4}
    round_trips: list[int] = []

    async def follow_and_publish() -> list[Any]:
        follower = await pubsub_layer.new_channel()
        await pubsub_layer.group_add("plan.7", follower)
        await pubsub_layer.group_add("session.5", follower)

        def publish_a_batch() -> None:
            publisher = broadcast._redis_publisher(pubsub_layer)
            real_pipeline = publisher.client.pipeline

            def counted_pipeline(**kwargs: Any) -> Any:
                pipe = real_pipeline(**kwargs)
                real_execute = pipe.execute
                pipe.execute = lambda: round_trips.append(len(pipe)) or real_execute()
                return pipe

            monkeypatch.setattr(publisher.client, "pipeline", counted_pipeline)
            with broadcast.batched():
                broadcast.publish(["plan.7", "session.5"], EVENT)
                with broadcast.batched():  # an inner block sends with the outer one
                    broadcast.publish(["plan.7"], second)
                assert round_trips == []  # nothing has left yet

        await asyncio.to_thread(publish_a_batch)
        received = [await asyncio.wait_for(pubsub_layer.receive(follower), 10) for _ in range(3)]
        await pubsub_layer.flush()
        return received

    with ThreadPoolExecutor(1) as pool:
        received = pool.submit(asyncio.run, follow_and_publish()).result(timeout=60)
    assert round_trips == [3]  # three PUBLISHes, one pipeline
    first = broadcast.encode_event(EVENT)
    assert received == [first, first, broadcast.encode_event(second)]
