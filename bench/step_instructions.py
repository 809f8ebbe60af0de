"""Benchmark 8: CPU instructions per agent step, counted by valgrind.

Benchmark 5's wall time and CPU per step move with this shared VM's speed (the same code gave
12.4 and 19 ms of CPU per step hours apart), so a change worth a few per cent cannot be seen
in them. Instructions executed do not depend on the machine's speed: this benchmark drives
`--runs` runs through the run host (`agents/runtime`, as a worker process does: the event
loop, the database lanes, litellm streaming from an OpenAI-compatible server in another
process, PostgreSQL and Redis broadcasts), `--in-flight` of them at a time, and counts the
instructions of this process while they run, with valgrind's callgrind switched on only for
that part. The floor in the same run: the same number of litellm calls alone
(`agents.llm.acomplete`, streamed, requests of the same size), so *framework* = step - call.

    .venv/bin/python bench/step_instructions.py [--runs 8] [--in-flight 4] [--label TEXT]

`--watchers` measures instead what a step costs by who watches its session (answers are
streamed only to watchers, `agents/streaming.py`): runs whose sessions a page has open
(streamed), runs nobody watches (one piece), and the reference, nobody watching with every
answer streamed all the same (`PLANBOARD_STREAM_UNWATCHED`), in turn for `--repeats` rounds, a
4-word and a `--final-words` (default 300) final answer (bench/_step_watchers.py).

Each labelled run appends its row to bench/results/step_instructions.json (every earlier row
is kept) and writes the section of docs/PERFORMANCE.md from this run: its step beside the
floor measured with it. Without valgrind on PATH (or with
`--no-valgrind`) it prints CPU seconds instead and writes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common

UNDER_VALGRIND = "PLANBOARD_BENCH_UNDER_CALLGRIND"


class Counter:
    """Instructions of this process between `start` and `stop` under callgrind (its
    instrumentation is off until then); CPU seconds otherwise."""

    def __init__(self) -> None:
        self.valgrind = bool(os.environ.get(UNDER_VALGRIND))
        self.cpu = 0.0

    def _instrument(self, on: bool) -> None:
        subprocess.run(
            ["callgrind_control", "-i", "on" if on else "off", str(os.getpid())],
            check=True,
            stdout=subprocess.DEVNULL,
        )

    def start(self) -> None:
        if self.valgrind:
            self._instrument(True)
        self.cpu = time.process_time()

    def stop(self) -> float:
        """Instructions (callgrind: dumped, then read from its file) or CPU seconds."""
        self.cpu = time.process_time() - self.cpu
        if not self.valgrind:
            return self.cpu
        self._instrument(False)
        out = Path(os.environ[UNDER_VALGRIND])
        before = set(out.parent.glob(out.name + "*"))
        subprocess.run(
            ["callgrind_control", "-d", str(os.getpid())], check=True, stdout=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            dumped = set(out.parent.glob(out.name + "*")) - before
            if dumped:
                text = sorted(dumped)[-1].read_text(errors="replace")
                found = re.search(r"^totals: (\d+)", text, re.M)
                if found:
                    # The dump holds what was counted since the previous one (or the start).
                    return float(found.group(1))
            time.sleep(0.2)
        raise SystemExit("callgrind wrote no dump")


def drive_runs(
    runs: int, in_flight: int, counter: Counter | None = None, *, watched: bool = False
) -> int:
    """Post `runs` messages, then host their runs `in_flight` at a time; returns the steps
    taken. Only the hosting is counted (`counter`): the messages are posted before.
    `watched`: a page has each session open (presence), as a person watching it."""
    from asgiref.sync import async_to_sync
    from django.contrib.auth import get_user_model

    from agents.runtime import host as run_host
    from planboard import broadcast, presence, services
    from planboard.models import AgentRun

    host = run_host.current()
    assert host is not None
    users = get_user_model().objects
    run_ids: list[int] = []
    for number in range(runs):
        user = users.create_user(f"steps-{number}-{time.monotonic_ns()}")
        session = services.session_create(owner=user, need_user_confirm=False)
        if watched:
            page = presence.Presence(key=f"b{number}", user_id=user.pk, username="b", name="b")
            async_to_sync(presence.store().put)(session.pk, page)
        _, run = services.message_post(
            session_id=session.pk, author=user, content="Plan something small"
        )
        run_ids.append(run.pk)
    ended: set[int] = set()
    change = threading.Condition()

    def listen(group: str, event: Any) -> None:
        # Every run's end reaches its session's sockets as a `session.run` event.
        run = event.get("run") if event.get("type") == "session.run" else None
        if run and run.get("status") not in ("queued", "running"):
            with change:
                ended.add(int(run["id"]))
                change.notify()

    unsubscribe = broadcast.subscribe(listen)
    try:
        if counter is not None:
            counter.start()
        waiting = list(run_ids)
        with change:
            while len(ended) < len(run_ids):
                while waiting and len(run_ids) - len(waiting) - len(ended) < in_flight:
                    host.take(waiting.pop(0))
                change.wait(60)
    finally:
        unsubscribe()
    finished = AgentRun.objects.filter(pk__in=run_ids)
    bad = [s for s in finished.values_list("status", flat=True) if s != "succeeded"]
    if bad:
        raise SystemExit(f"runs did not succeed: {bad}")
    return sum(finished.values_list("step_count", flat=True))


class Requests:
    """The model requests the runs made, to make again as the floor."""

    def __init__(self) -> None:
        self.made: list[dict[str, Any]] = []

    def __enter__(self) -> Requests:
        from agents import llm

        self.original = llm.acomplete

        async def recorded(**kwargs: Any) -> Any:
            self.made.append({k: v for k, v in kwargs.items() if k != "listener"})
            return await self.original(**kwargs)

        llm.acomplete = recorded
        return self

    def __exit__(self, *_: object) -> None:
        from agents import llm

        llm.acomplete = self.original

    def again(self, in_flight: int) -> None:
        """The floor: each request once more through `agents.llm.acomplete` alone, on the run
        host's loop (its litellm clients and connections are the runs' own)."""
        from agents import llm
        from agents.runtime import host as run_host

        async def all_calls() -> None:
            gate = asyncio.Semaphore(in_flight)

            async def one(request: dict[str, Any]) -> None:
                async with gate:
                    await self.original(
                        **request, listener=llm.StreamListener(on_text=lambda _: None)
                    )

            await asyncio.gather(*(one(r) for r in self.made))

        host = run_host.current()
        assert host is not None
        asyncio.run_coroutine_threadsafe(all_calls(), host.loop).result()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    url = common.recreate_postgres()
    common.flush_redis()
    common.setup_django(
        url,
        REDIS_URL=common.REDIS_BENCH_URL,
        PLANBOARD_LLM_MODEL="openai/paced-model",
        PLANBOARD_RUN_DISPATCHER="_common.no_dispatch",
    )
    from django.conf import settings

    from agents.runtime import host as run_host
    from agents.tasks import send_to_any_worker

    server, base_url = common.start_paced_model(
        delay=args.delay, answers=args.answers, final_words=args.final_words
    )
    try:
        settings.PLANBOARD_LLM_API_BASE = base_url
        settings.PLANBOARD_LLM_API_KEY = "sk-bench"
        run_host.enable(send_on=send_to_any_worker, recycle=False)
        with Requests() as warm:
            drive_runs(2, 2)  # litellm's lazy set-up, the first statements, the host
        warm.again(2)
        counter = Counter()
        with Requests() as requests:
            steps = drive_runs(args.runs, args.in_flight, counter)
            per_step = counter.stop() / steps
        requests.again(args.in_flight)  # once uncounted: its first calls start helper threads
        counter.start()
        requests.again(args.in_flight)
        per_call = counter.stop() / len(requests.made)
        run_host.shutdown()
    finally:
        server.kill()
    unit = "instructions" if counter.valgrind else "cpu_s"
    return {
        "label": args.label,
        "unit": unit,
        "runs": args.runs,
        "final_words": args.final_words,
        "in_flight": args.in_flight,
        "steps": steps,
        "per_step": round(per_step, 6 if unit == "cpu_s" else 0),
        "per_litellm_call": round(per_call, 6 if unit == "cpu_s" else 0),
        "framework_per_step": round(per_step - per_call, 6 if unit == "cpu_s" else 0),
    }


def write_report(result: dict[str, Any]) -> None:
    facts = common.run_facts()
    common.record_run("step_instructions", [result], facts)
    r = result

    def millions(value: float) -> str:
        return f"{value / 1e6:.2f}"

    lines = [
        *common.facts_lines(facts),
        "",
        "Instructions per agent step (valgrind's callgrind) of one process hosting "
        f"{r['runs']} runs as a worker does ({r['in_flight']} in flight, 4 answers each). The "
        "floor in the same run: the same model requests made again through "
        "`agents.llm.acomplete` alone. Two runs of one code differ by about 0.3 %.",
        "",
        *common.table(
            [
                "row",
                "final answer (words)",
                "M instructions per step",
                "M per model call alone (floor)",
                "M framework per step",
            ],
            [
                [
                    r["label"],
                    4 + r.get("final_words", 0),
                    millions(r["per_step"]),
                    millions(r["per_litellm_call"]),
                    millions(r["framework_per_step"]),
                ]
            ],
        ),
        "",
        "The floor moves between runs: compare the framework column with earlier rows "
        "(`python -m bench.history step_instructions`), or run two revisions' rows in turn.",
    ]
    common.write_section("step_instructions", "8. Instructions per agent step", lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--in-flight", type=int, default=4)
    parser.add_argument("--label", default="")
    parser.add_argument("--answers", type=int, default=4)
    parser.add_argument("--delay", type=float, default=0.05, help="the model's answer delay")
    parser.add_argument(
        "--final-words",
        type=int,
        default=0,
        help="the final answer's length in words, streamed in 7-character pieces (0: 4 words)",
    )
    parser.add_argument("--no-valgrind", action="store_true")
    parser.add_argument("--watchers", action="store_true", help="steps by who watches")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of rows, with --watchers")
    args = parser.parse_args()
    valgrind = shutil.which("valgrind")
    if not args.no_valgrind and valgrind and not os.environ.get(UNDER_VALGRIND):
        out = Path(tempfile.mkdtemp(prefix="step-instructions-")) / "callgrind.out"
        env = {**os.environ, UNDER_VALGRIND: str(out)}
        argv = [
            valgrind,
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            "--cache-sim=no",
            "--branch-sim=no",
            "-q",
            sys.executable,
            *sys.argv,
        ]
        raise SystemExit(subprocess.call(argv, env=env))
    if args.watchers:
        import _step_watchers

        _step_watchers.main(args, Counter, drive_runs)
        return
    result = measure(args)
    print(json.dumps(result))
    if result["unit"] == "instructions" and args.label:
        write_report(result)


if __name__ == "__main__":
    main()
