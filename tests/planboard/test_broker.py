"""planboard/broker.py: Celery's Redis transport with one `redis.Redis` per connection pool,
built once, not per published task; messages go and come back as with kombu's own."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from typing import Any

import pytest
import redis
from kombu import Connection, Exchange, Queue

from planboard.broker import Transport

pytestmark = pytest.mark.redis


def test_publishes_share_one_client_and_arrive(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"planboard-test-{uuid.uuid4().hex[:12]}"
    queue = Queue(name, Exchange(name), routing_key=name)
    with Connection(redis_url, transport=Transport) as connection:
        producer = connection.Producer()
        producer.publish({"run": 0}, exchange=queue.exchange, routing_key=name, declare=[queue])
        built: list[Any] = []
        original = redis.Redis.__init__

        def counted(self: redis.Redis, *args: Any, **kwargs: Any) -> None:
            built.append(self)
            original(self, *args, **kwargs)

        monkeypatch.setattr(redis.Redis, "__init__", counted)
        for run in range(1, 4):
            producer.publish({"run": run}, exchange=queue.exchange, routing_key=name)
        assert built == []  # the first publish's client serves every later one
        got = [queue(connection.default_channel).get(no_ack=True) for _ in range(4)]
        assert [m.payload["run"] for m in got if m is not None] == [0, 1, 2, 3]
        queue(connection.default_channel).delete()


@pytest.mark.parametrize(
    ("broker", "transport"),
    [("redis://127.0.0.1:6379/3", "planboard.broker:Transport"), ("memory://", None)],
)
def test_a_redis_broker_uses_it(broker: str, transport: str | None) -> None:
    """Settings are read once per process: a fresh one reads them with this broker."""
    show = (
        "from django.conf import settings as s; print(getattr(s, 'CELERY_BROKER_TRANSPORT', None))"
    )
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker,
        "DJANGO_SETTINGS_MODULE": "planboard.settings",
    }
    done = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {show}"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(transport)
