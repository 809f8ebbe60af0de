"""The run host's database lane: a bounded pool where a young run's units go first."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agents.runtime.lanes import YOUNG_RUN_UNITS, PoolLane


def test_queued_units_of_the_youngest_run_go_first_then_in_arrival_order() -> None:
    lane = PoolLane(threads=1)
    release = threading.Event()
    order: list[str] = []

    async def scenario() -> None:
        old, young = lane.for_run(), lane.for_run()
        # The old run has had its share of units already.
        for _ in range(YOUNG_RUN_UNITS):
            await old.run(lambda: None)
        blocker = asyncio.ensure_future(lane.run(release.wait))  # holds the only thread
        await asyncio.sleep(0.05)
        queued = [
            asyncio.ensure_future(old.run(order.append, "old-1")),
            asyncio.ensure_future(old.run(order.append, "old-2")),
            asyncio.ensure_future(young.run(order.append, "young-1")),
            asyncio.ensure_future(young.run(order.append, "young-2")),
        ]
        await asyncio.sleep(0.05)
        release.set()
        await asyncio.gather(blocker, *queued)

    try:
        asyncio.run(scenario())
    finally:
        lane.close()
    # young-1 has rank 0, young-2 rank 1: both ahead of the old run's, which keep their order.
    assert order == ["young-1", "young-2", "old-1", "old-2"]


def test_a_unit_returns_its_value_raises_its_error_and_a_cancelled_one_never_runs() -> None:
    lane = PoolLane(threads=2)
    ran: list[str] = []
    release = threading.Event()

    def fail() -> None:
        raise ValueError("no such subtask")

    async def scenario() -> None:
        run = lane.for_run()
        assert await run.run(lambda a, *, b: a + b, 2, b=3) == 5
        with pytest.raises(ValueError, match="no such subtask"):
            await run.run(fail)
        blockers = [asyncio.ensure_future(lane.run(release.wait)) for _ in range(2)]
        await asyncio.sleep(0.05)
        waiting = asyncio.ensure_future(run.run(ran.append, "cancelled"))
        await asyncio.sleep(0.05)
        waiting.cancel()
        release.set()
        await asyncio.gather(*blockers)
        await run.run(ran.append, "after")

    try:
        asyncio.run(scenario())
    finally:
        lane.close()
    assert ran == ["after"]


def test_closing_runs_the_queued_units_first_and_ends_the_threads() -> None:
    before = set(threading.enumerate())
    lane = PoolLane(threads=2)
    done: list[int] = []

    async def scenario() -> None:
        run = lane.for_run()
        await asyncio.gather(*(run.run(done.append, n) for n in range(20)))

    asyncio.run(scenario())
    lane.close()
    assert sorted(done) == list(range(20))
    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("run-db")]
