"""The worker's own memory limit: which run is charged with the process's growth,
which run fails past the limit, which are handed off, and when the process recycles — with a
fake RSS sampler; and a run told to fail stops with the message at its next safe point.

The real thing (a Celery pool process ballooning past a small limit) is in
tests/system/test_worker_memory.py."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any

import pytest

from agents import loop, tasks
from agents.lease import new_worker_id
from agents.models import AgentStep
from agents.runtime import memory_limit
from agents.runtime.control import MemoryLimitExceeded, RunControl
from agents.runtime.host import RunHost
from agents.runtime.lanes import CallerLane
from agents.runtime.memory_limit import MB, MemoryMeter, decide
from planboard import services
from planboard.models import AgentRun, ChatSession
from tests.support.runs import post
from tests.support.scripted import ScriptedModel, do, say


class FakeRss:
    """RSS as the test sets it; what each thread touched grows with what it grows."""

    def __init__(self, mb: int) -> None:
        self.now = mb * MB
        self.by_thread: dict[int, int] = {}

    def grow(self, mb: int, *, touched: bool = True) -> None:
        self.now += mb * MB
        if touched:
            tid = threading.get_native_id()
            self.by_thread[tid] = self.by_thread.get(tid, 0) + mb * MB

    def __call__(self) -> int:
        return self.now

    def touched(self) -> int:
        return self.by_thread.get(threading.get_native_id(), 0)

    def touched_by(self, tid: int) -> int:
        return self.by_thread.get(tid, 0)

    def meter(self, limit_mb: int = 10_000) -> MemoryMeter:
        return MemoryMeter(
            limit_bytes=limit_mb * MB,
            sample=self,
            touched=self.touched,
            touched_by=self.touched_by,
        )


# --- charging ---


def test_a_unit_is_charged_with_its_growth_minus_the_units_inside_it() -> None:
    rss = FakeRss(100)
    meter = rss.meter()
    waiting = meter.begin(1)  # run 1 waits on its model...
    rss.grow(2)
    inner = meter.begin(2)  # ...while run 2's unit balloons
    rss.grow(500)
    meter.end(inner)
    rss.grow(1)
    meter.end(waiting)
    assert meter.growth == {2: 500 * MB, 1: 3 * MB}


def test_nested_units_are_charged_once_each() -> None:
    rss = FakeRss(100)
    meter = rss.meter()
    outer = meter.begin(1)
    middle = meter.begin(2)
    inner = meter.begin(3)
    rss.grow(300)
    meter.end(inner)
    rss.grow(20)
    meter.end(middle)
    rss.grow(5)
    meter.end(outer)
    assert meter.growth == {3: 300 * MB, 2: 20 * MB, 1: 5 * MB}
    assert sum(meter.growth.values()) == 325 * MB


def test_overlapping_units_leave_the_one_that_grew_the_process_in_front() -> None:
    rss = FakeRss(100)
    meter = rss.meter()
    small = meter.begin(1)
    big = meter.begin(2)
    rss.grow(50)
    meter.end(small)  # ends while the big unit is still growing the process
    rss.grow(400)
    meter.end(big)
    assert meter.growth[2] > meter.growth[1]
    assert meter.growth[2] == 450 * MB


def test_every_unit_end_reports_the_size_and_a_finished_run_is_forgotten() -> None:
    rss = FakeRss(100)
    seen: list[int] = []
    meter = rss.meter()
    meter.on_sample = seen.append

    async def unit() -> str:
        rss.grow(7)
        return "done"

    assert asyncio.run(meter.measured(4, unit())) == "done"
    assert seen == [107 * MB] and meter.growth == {4: 7 * MB}
    meter.forget(4)
    assert meter.growth == {}


def test_the_limit_is_off_at_zero_or_where_rss_cannot_be_measured() -> None:
    assert memory_limit.meter_from_settings(limit_mb=0, sample=FakeRss(1)) is None
    assert memory_limit.meter_from_settings(limit_mb=512, sample=lambda: None) is None
    meter = memory_limit.meter_from_settings(limit_mb=512, sample=FakeRss(1))
    assert meter is not None and meter.limit_bytes == 512 * MB


def test_this_process_rss_is_measured() -> None:
    size = memory_limit.process_rss()
    assert size is not None and 10 * MB < size < 100_000 * MB
    ballast = b"\x01" * (64 * MB)  # touched pages: resident
    grown = memory_limit.process_rss()
    assert grown is not None and grown - size > 48 * MB
    del ballast


# --- the decision ---


def test_the_run_that_grew_the_process_most_fails_and_the_others_are_handed_off() -> None:
    decision = decide(growth={1: 5 * MB, 2: 900 * MB, 3: -MB}, running=[3, 1, 2], recycle=True)
    assert decision.fail == 2
    assert decision.hand_off == [1, 3]
    assert decision.recycle


def test_without_recycling_only_the_run_that_grew_it_fails() -> None:
    decision = decide(growth={1: 5 * MB, 2: 900 * MB}, running=[1, 2], recycle=False)
    assert decision.fail == 2 and decision.hand_off == []


def test_no_run_is_blamed_when_none_of_the_running_ones_grew_the_process() -> None:
    # The growth came from a run that has ended (or from the process itself).
    decision = decide(growth={9: 900 * MB, 1: 0}, running=[1, 2], recycle=True)
    assert decision.fail is None
    assert decision.hand_off == [1, 2]


# --- the host acting on it ---


class Exits:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def host_with(
    settings: Any, rss: FakeRss, *, recycle: bool, runs: list[int]
) -> tuple[RunHost, Exits]:
    settings.PLANBOARD_TOOL_TIMEOUT = 5
    exits = Exits()
    host = RunHost(
        send_on=tasks.send_to_any_worker,
        recycle=recycle,
        meter=rss.meter(1000),
        exit_process=exits,
    )
    assert host.meter is not None
    for run_id in runs:
        task: Any = host.loop.create_future()  # stands for the run's task
        host.runs[run_id] = (task, RunControl(run_id=run_id, meter=host.meter))
    return host, exits


def close(host: RunHost) -> None:
    if host.recycling is not None and not host.recycling.done():
        host.recycling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            host.loop.run_until_complete(host.recycling)
    host.loop.close()


def unit_of(host: RunHost, rss: FakeRss, run_id: int, mb: int) -> None:
    assert host.meter is not None
    token = host.meter.begin(run_id)
    rss.grow(mb)
    host.meter.end(token)


def test_a_pool_process_past_its_limit_fails_one_run_hands_off_the_rest_and_recycles(
    settings: Any,
) -> None:
    rss = FakeRss(300)
    host, exits = host_with(settings, rss, recycle=True, runs=[1, 2, 3])
    try:
        unit_of(host, rss, 1, 10)
        unit_of(host, rss, 3, 5)
        assert host.recycling is None and host.accepting  # under the limit: nothing happens
        unit_of(host, rss, 2, 800)  # 1115 MB > 1000 MB
        controls = {run_id: control for run_id, (_, control) in host.runs.items()}
        assert controls[2].failure is not None
        assert "1000 MB" in controls[2].failure
        assert "PLANBOARD_WORKER_MEMORY_LIMIT_MB" in controls[2].failure
        assert "800 MB" in controls[2].failure
        with pytest.raises(MemoryLimitExceeded):
            controls[2].check()
        assert not controls[2].handing_off
        assert controls[1].handing_off and controls[3].handing_off
        assert controls[1].failure is None and controls[3].failure is None
        assert not host.accepting  # no new runs on this process
        assert host.recycling is not None
        unit_of(host, rss, 1, 1)  # acted on once
        assert controls[1].failure is None
        # The process recycles once every run has left.
        host.loop.run_until_complete(asyncio.sleep(0.2))
        assert exits.count == 0
        host.runs.clear()
        host.loop.run_until_complete(host.recycling)
        assert exits.count == 1
    finally:
        close(host)


def test_a_process_that_must_not_end_only_fails_the_run_that_grew_it(settings: Any) -> None:
    rss = FakeRss(300)
    host, exits = host_with(settings, rss, recycle=False, runs=[1, 2])
    try:
        unit_of(host, rss, 1, 5)
        unit_of(host, rss, 2, 800)
        controls = {run_id: control for run_id, (_, control) in host.runs.items()}
        assert controls[2].failure is not None
        assert controls[1].failure is None and not controls[1].handing_off
        assert host.accepting and host.recycling is None
        # Still above the limit: a little more growth blames nobody...
        unit_of(host, rss, 1, 5)
        assert controls[1].failure is None
        # ...a tenth of the limit more does.
        unit_of(host, rss, 1, 150)
        assert controls[1].failure is not None
        assert exits.count == 0
    finally:
        close(host)


# --- a run told to fail ---


@pytest.mark.django_db
def test_a_run_over_the_limit_fails_with_the_message_at_its_next_safe_point(
    user: Any, scripted_model: ScriptedModel
) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    control_box: list[RunControl] = []
    message = memory_limit.failure_message(limit_bytes=1024 * MB, rss=1100 * MB, grown=700 * MB)
    scripted_model.script.extend(
        [do(lambda _: control_box[0].fail(message)), say("A very large answer.")]
    )
    queued = post(session, user, "Grow the worker")
    worker = new_worker_id()
    run = services.run_start(run_id=queued.pk, worker=worker)
    control = RunControl(run_id=run.pk)
    control_box.append(control)
    finished = CallerLane().serve(
        lambda lane: loop.drive(run, worker=worker, lane=lane, control=control)
    )
    assert finished.status == AgentRun.Status.FAILED
    assert finished.error == message
    assert "PLANBOARD_WORKER_MEMORY_LIMIT_MB" in finished.error
    assert finished.lease_owner == ""
    # The step that was answering is stored; no further model call was made.
    assert len(scripted_model.requests) == 1
    assert AgentStep.objects.filter(run=run).count() == 1
    assert ChatSession.objects.filter(pk=session.pk).exists()


def test_a_wait_on_the_model_ends_at_once_when_the_run_must_fail() -> None:
    async def main() -> None:
        control = RunControl(run_id=7)
        asyncio.get_running_loop().call_later(0.05, control.fail, "over the limit")
        await control.watch(asyncio.sleep(600))

    with pytest.raises(MemoryLimitExceeded, match="over the limit"):
        asyncio.run(asyncio.wait_for(main(), timeout=30))


def test_open_units_are_charged_with_their_growth_so_far() -> None:
    rss = FakeRss(100)
    meter = rss.meter()
    waiting = meter.begin(1)  # run 1 waits...
    rss.grow(3)
    balloon = meter.begin(2)  # ...run 2's unit starts to balloon...
    rss.grow(400)
    quick = meter.begin(1)  # ...and a quick unit of run 1 ends meanwhile, past the limit
    rss.grow(1)
    meter.end(quick)
    rss.grow(300)
    charged = meter.charges(rss.now)
    assert charged[2] == 700 * MB  # still open, and the one to blame
    assert charged[1] == 4 * MB
    assert sum(charged.values()) == rss.now - 100 * MB
    meter.end(balloon)
    meter.end(waiting)
    assert meter.growth == {1: 4 * MB, 2: 700 * MB}


def test_the_run_whose_unit_is_still_ballooning_is_the_one_that_fails(settings: Any) -> None:
    rss = FakeRss(300)
    host, _ = host_with(settings, rss, recycle=True, runs=[1, 2])
    assert host.meter is not None
    meter = host.meter
    ballooned, release = threading.Event(), threading.Event()

    def balloon() -> None:  # run 2's unit, on a lane thread, still at work
        rss.grow(650)
        ballooned.set()
        release.wait(30)

    lane = threading.Thread(target=meter.counted, args=(2, balloon))
    lane.start()
    try:
        assert ballooned.wait(30)
        # Run 1 waited on the loop all along and ends its wait first, past the limit.
        waiting = meter.begin(1)
        rss.grow(100, touched=False)  # the process grows meanwhile, by run 2's thread
        meter.end(waiting)
        controls = {run_id: control for run_id, (_, control) in host.runs.items()}
        assert controls[2].failure is not None and controls[1].failure is None
        assert controls[1].handing_off
    finally:
        release.set()
        lane.join(30)
        close(host)


def test_a_lane_unit_is_charged_only_with_what_its_own_thread_touched() -> None:
    rss = FakeRss(100)
    meter = rss.meter()
    grown_elsewhere = threading.Event()

    def innocent() -> str:  # another thread grows the process during this unit
        other = threading.Thread(target=lambda: (rss.grow(500), grown_elsewhere.set()))
        other.start()
        other.join(30)
        rss.grow(2)
        return "ok"

    assert meter.counted(1, innocent) == "ok"
    assert grown_elsewhere.is_set()
    assert meter.growth == {1: 2 * MB}

    def churn() -> None:  # touches pages it gives back: no growth
        rss.grow(50)
        rss.grow(-50, touched=False)

    meter.counted(3, churn)
    assert meter.growth[3] == 0
