"""The worker's own memory limit: one run must not take its host's other runs down.

A worker process drives many runs on one event loop (`agents.runtime.host`). One of them can
make the process grow without bound — a session with a thousand tools, a tool that answers
with a mountain of text — until the kernel's OOM killer ends the whole process and every run
in it. So the host measures the process's resident size (RSS) around every unit of a run's
work — each database unit on its lane, each wait on a hosted model, each MCP call — and
charges each run with what its units grew the process by. Past
`PLANBOARD_WORKER_MEMORY_LIMIT_MB` (0 = off) the run charged the most fails with an error
naming the limit and the setting, the other runs are handed off as on SIGTERM, and the
process recycles (`agents.runtime.host`).

Units of different runs overlap (several lane threads, many waits on one loop), so a plain
before/after difference of the process's size would charge a run that merely waited while
another run grew the process. A unit is therefore charged with the growth of the process
during it, but never more than the memory its own thread touched for the first time in that
time (the thread's minor page faults, which Linux counts per thread): a database unit runs on
one lane thread, so what another thread allocated is not its own. A wait on the loop (a
hosted model, an MCP call) shares the loop's thread with the other runs' waits, so a wait is
charged with what the loop touched during it minus what waits that opened and closed inside
it touched. Units still under way when the limit is crossed are charged with their growth so
far. Memory that is allocated and freed again (a large response parsed and dropped) touches
pages without growing the process, and is charged nothing.

Sampling is cheap: one `pread` of /proc/self/statm and one `getrusage(RUSAGE_THREAD)` (a few
microseconds). Off Linux the size falls back to `resource.getrusage`'s peak RSS (which never
shrinks, so it still trips the limit when the process got that large) and units are charged
with the process's growth alone; where neither exists the limit is off, with a warning.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")
MB = 1024 * 1024

SETTING = "PLANBOARD_WORKER_MEMORY_LIMIT_MB"


# --- the sampler ---


class _Statm:
    """The process's RSS in bytes from /proc/self/statm, the file kept open."""

    def __init__(self) -> None:
        self.fd = os.open("/proc/self/statm", os.O_RDONLY)
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.pid = os.getpid()

    def __call__(self) -> int | None:
        return int(os.pread(self.fd, 128, 0).split()[1]) * self.page


def _peak_rss() -> int | None:
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # bytes vs KiB


_statm: _Statm | None = None


def process_rss() -> int | None:
    """This process's resident size in bytes (its peak where the current size is unknown),
    or None when it cannot be measured."""
    global _statm
    try:
        if _statm is None or _statm.pid != os.getpid():  # a forked child opens its own
            _statm = _Statm()
        return _statm()
    except (OSError, ValueError, IndexError):
        return _peak_rss()


# --- charging runs ---

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def thread_touched() -> int | None:
    """Bytes of memory this thread has touched for the first time (its minor page faults),
    or None where the kernel does not count them per thread."""
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt) * _PAGE
    except (ImportError, AttributeError, OSError):
        return None


def other_thread_touched(tid: int) -> int | None:
    """`thread_touched` of another thread of this process (Linux: /proc)."""
    try:
        with open(f"/proc/self/task/{tid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[7]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class _Window:
    """A wait of a run on the event loop (a model call, an MCP call)."""

    run_id: int
    rss: int
    touched: int | None
    nested: int = 0  # what the loop touched in windows that opened and closed inside this one


@dataclass
class _Work:
    """A unit of a run's work on a lane thread, while it runs."""

    run_id: int
    tid: int
    rss: int
    touched: int | None


def _charge(*, touched: int | None, grown: int) -> int:
    """What a unit is charged with: the growth of the process during it, but no more than
    its own thread touched (where the kernel counts that) — another run's unit running at
    the same time grew the process, not this one."""
    if touched is None:
        return grown
    return max(0, min(touched, grown))


@dataclass
class MemoryMeter:
    """Charges runs with the growth of the process during their units (see the module)."""

    limit_bytes: int
    sample: Callable[[], int | None] = process_rss
    touched: Callable[[], int | None] = thread_touched
    touched_by: Callable[[int], int | None] = other_thread_touched
    # Called on the loop after every unit with the RSS it ended at.
    on_sample: Callable[[int], None] | None = None
    growth: dict[int, int] = field(default_factory=dict)
    _windows: dict[int, _Window] = field(default_factory=dict)  # open, in start order
    _work: dict[int, _Work] = field(default_factory=dict)  # lane units running now
    _next: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- waits on the loop (the loop's thread only) ---

    def begin(self, run_id: int) -> int | None:
        rss = self.sample()
        if rss is None:
            return None
        self._next += 1
        self._windows[self._next] = _Window(run_id=run_id, rss=rss, touched=self.touched())
        return self._next

    def end(self, token: int | None) -> None:
        if token is None:
            return
        window = self._windows.pop(token, None)
        rss = self.sample()
        if window is None or rss is None:
            return
        touched = self.touched()
        own: int | None = None
        if touched is not None and window.touched is not None:
            own = touched - window.touched - window.nested
            for key, outer in self._windows.items():
                if key < token:  # opened before this one and still open: this one is inside
                    outer.nested += own
        self._add(window.run_id, _charge(touched=own, grown=rss - window.rss))
        if self.on_sample is not None:
            self.on_sample(rss)

    async def measured(self, run_id: int, call: Awaitable[T]) -> T:
        token = self.begin(run_id)
        try:
            return await call
        finally:
            self.end(token)

    # --- units on a lane thread ---

    def counted(self, run_id: int, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run `fn` on this (lane) thread, charging `run_id` with what it grew the process
        by. The charge is added here; the loop looks at the limit when the unit is over."""
        rss = self.sample()
        if rss is None:
            return fn(*args, **kwargs)
        key = threading.get_ident()
        with self._lock:
            self._work[key] = _Work(
                run_id=run_id, tid=threading.get_native_id(), rss=rss, touched=self.touched()
            )
        try:
            return fn(*args, **kwargs)
        finally:
            after, touched = self.sample(), self.touched()
            with self._lock:
                work = self._work.pop(key)
                if after is not None:
                    own = None
                    if touched is not None and work.touched is not None:
                        own = touched - work.touched
                    charge = _charge(touched=own, grown=after - work.rss)
                    self.growth[run_id] = self.growth.get(run_id, 0) + charge

    def _add(self, run_id: int, charge: int) -> None:
        with self._lock:
            self.growth[run_id] = self.growth.get(run_id, 0) + charge

    # --- reading ---

    def charges(self, rss: int) -> dict[int, int]:
        """Each run's growth so far at size `rss`, its units still under way included (the
        limit may be reached when another run's unit ends while the one growing the process
        is still at work). On the loop's thread."""
        with self._lock:
            charged = dict(self.growth)
            work = list(self._work.values())
        for unit in work:
            now = self.touched_by(unit.tid)
            own = None if now is None or unit.touched is None else now - unit.touched
            charged[unit.run_id] = charged.get(unit.run_id, 0) + _charge(
                touched=own, grown=rss - unit.rss
            )
        touched = self.touched()
        inside = 0  # what the open windows inside the current one touched
        for window in reversed(list(self._windows.values())):  # innermost (latest) first
            own = None
            if touched is not None and window.touched is not None:
                own = touched - window.touched - window.nested - inside
                inside += own
            charged[window.run_id] = charged.get(window.run_id, 0) + _charge(
                touched=own, grown=rss - window.rss
            )
        return charged

    def forget(self, run_id: int) -> None:
        with self._lock:
            self.growth.pop(run_id, None)

    def reset(self) -> None:
        """Charges start again from nothing (after a limit was acted on)."""
        with self._lock:
            self.growth.clear()


def meter_from_settings(
    *, limit_mb: float, sample: Callable[[], int | None] = process_rss
) -> MemoryMeter | None:
    """The host's meter, or None when the limit is off (0) or RSS cannot be measured here."""
    if limit_mb <= 0:
        return None
    if sample() is None:
        logger.warning("%s is set but this platform cannot measure RSS: no memory limit", SETTING)
        return None
    return MemoryMeter(limit_bytes=int(limit_mb * MB), sample=sample)


# --- the decision ---


@dataclass(frozen=True)
class Decision:
    fail: int | None  # the run that grew the process the most, if any grew it
    hand_off: list[int]  # the others, when the process recycles
    recycle: bool


def decide(*, growth: dict[int, int], running: Iterable[int], recycle: bool) -> Decision:
    """What a host past its limit does: the running run charged with the most growth fails
    (none when no running run grew the process: an earlier one did, or the process did
    itself); when the process can recycle (a pool process) every other run is handed off and
    the process goes; where it cannot (the embedded worker inside the web server) the others
    go on."""
    running = sorted(running)
    charged = [(growth.get(run_id, 0), run_id) for run_id in running]
    worst = max(charged, default=(0, None))
    fail = worst[1] if worst[0] > 0 else None
    others = [run_id for run_id in running if run_id != fail] if recycle else []
    return Decision(fail=fail, hand_off=others, recycle=recycle)


def failure_message(*, limit_bytes: int, rss: int, grown: int) -> str:
    return (
        f"The worker process went past its memory limit of {limit_bytes // MB} MB "
        f"({SETTING}; it was at {rss // MB} MB), and this run grew it the most "
        f"({max(grown, 0) // MB} MB during its steps). The run was stopped so that the other "
        "runs on the worker could go on. A session with very many tools, or a tool that "
        "returns very large results, can do this: disable some toolsets or ask an operator "
        "to raise the limit."
    )


class MeteredLane:
    """A run's view of the host's lane: each unit it runs is measured for that run."""

    def __init__(self, lane: Any, meter: MemoryMeter, run_id: int) -> None:
        self._lane = lane
        self._meter = meter
        self._run_id = run_id

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        try:
            result: T = await self._lane.run(self._meter.counted, self._run_id, fn, *args, **kwargs)
        finally:
            rss = self._meter.sample()
            if rss is not None and self._meter.on_sample is not None:
                self._meter.on_sample(rss)
        return result

    def post(self, fn: Callable[..., Any], /, *args: Any) -> None:
        self._lane.post(fn, *args)

    async def drain(self) -> None:
        await self._lane.drain()
