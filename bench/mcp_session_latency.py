"""Benchmark 6: what an MCP tool call costs on a cold connection and on a warm live session.

For each server (the test server of tests/support, Python over stdio; the reference
"everything" server pinned in package.json, Node over stdio, when `npm ci` installed it) the
same `echo` call is timed three ways, one call at a time:

- cold: `agents.mcp.calls.acall_tool`, a fresh connection per call (start the server,
  initialize, call, stop it): what every call cost before calls shared a live session;
- warm: `agents.mcp.sessions.acall_tool`, the call as a run makes it, in the conversation's
  live session (opened by one call before the timing starts): queue to the session's task,
  call, render, redact, cut;
- server round trip: the MCP SDK's `call_tool` on an open session of Planboard's own
  connection code, nothing else: the server's own time plus the stdio pipe, the floor a warm
  call can reach.

Warm calls and round trips alternate, so both see the same machine load. No database is used.

    .venv/bin/python bench/mcp_session_latency.py [--calls 50]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common

TEST_SERVER = common.ROOT / "tests" / "support" / "mcp_test_server.py"
# A warm call: within a few ms of the server's own time.
TARGET_MS = 3.0
EVERYTHING = (
    common.ROOT
    / "node_modules"
    / "@modelcontextprotocol"
    / "server-everything"
    / "dist"
    / "index.js"
)


def servers() -> list[tuple[str, dict[str, Any], str, dict[str, Any]]]:
    """(label, toolset fields, tool, arguments) of each server measured."""
    found = [
        (
            "test server (Python, stdio)",
            {"command": sys.executable, "args": [str(TEST_SERVER)]},
            "echo",
            {"text": "ping"},
        )
    ]
    node = shutil.which("node")
    if node and EVERYTHING.exists():
        found.append(
            (
                "everything server (Node, stdio)",
                {"command": node, "args": [str(EVERYTHING), "stdio"]},
                "echo",
                {"message": "ping"},
            )
        )
    return found


async def measure(
    fields: dict[str, Any], tool: str, arguments: dict[str, Any], calls: int
) -> dict[str, list[float]]:
    from agents import mcp_limits
    from agents.mcp import calls, sessions, transport
    from planboard.models import Toolset

    toolset = Toolset(pk=1, name="bench", kind=Toolset.Kind.STDIO, **fields)
    times: dict[str, list[float]] = {"cold": [], "warm": [], "round trip": []}
    for _ in range(calls):
        started = time.perf_counter()
        output = await calls.acall_tool(toolset, tool, arguments)
        times["cold"].append(time.perf_counter() - started)
        assert output.ok, output.text

    conversation = sessions.Conversation(1)
    first = await sessions.acall_tool(toolset, tool, arguments, conversation=conversation)
    assert first.ok, first.text
    with tempfile.TemporaryFile(mode="w+") as errlog:
        async with transport.opened(
            toolset, errlog=errlog, reading=mcp_limits.ReadLimit()
        ) as session:
            await session.call_tool(tool, arguments)
            for _ in range(calls):
                started = time.perf_counter()
                output = await sessions.acall_tool(
                    toolset, tool, arguments, conversation=conversation
                )
                times["warm"].append(time.perf_counter() - started)
                assert output.ok and "[Planboard" not in output.text, output.text
                started = time.perf_counter()
                await session.call_tool(tool, arguments)
                times["round trip"].append(time.perf_counter() - started)
    await sessions.close_pool()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="calls timed per way and server")
    args = parser.parse_args()
    common.setup_django(common.sqlite_url())  # a refresh a server asks for reads it

    rows = []
    for label, fields, tool, arguments in servers():
        print(f"{label}: {args.calls} calls each way", flush=True)
        times = asyncio.run(measure(fields, tool, arguments, args.calls))
        rows.append(result_row(label, times, args.calls))
        print(rows[-1], flush=True)
    facts = common.run_facts(services=False)
    common.record_run("mcp_session_latency", rows, facts)
    common.write_section(
        "mcp_session_latency",
        "6. MCP tool calls: cold connection vs warm session",
        report(rows, args.calls, facts),
    )


def result_row(label: str, times: dict[str, list[float]], calls: int) -> dict[str, Any]:
    row: dict[str, Any] = {"label": label}
    for way, values in times.items():
        key = way.replace(" ", "_")
        row[f"{key}_median_ms"] = round(common.median(values) * 1000, 2)
        row[f"{key}_p95_ms"] = round(common.percentile(values, 0.95) * 1000, 2)
    row["warm_minus_round_trip_ms"] = round(row["warm_median_ms"] - row["round_trip_median_ms"], 2)
    row["cold_over_warm"] = round(row["cold_median_ms"] / row["warm_median_ms"])
    row["calls"] = calls
    return row


def report(rows: list[dict[str, Any]], calls: int, facts: dict[str, Any]) -> list[str]:
    def spread(row: dict[str, Any], way: str) -> str:
        return f"{row[f'{way}_median_ms']:.2f} / {row[f'{way}_p95_ms']:.2f}"

    worst = max(r["warm_minus_round_trip_ms"] for r in rows)
    return [
        *common.facts_lines(facts),
        "",
        f"One `echo` call at a time, {calls} per way and server. Cold: a fresh connection per "
        "call (server start included); warm: in the conversation's live session, as a run "
        "makes it. The reference in the same run: the MCP SDK's own `call_tool` round trip "
        "on an open session.",
        "",
        *common.table(
            [
                "server",
                "cold ms (median / p95)",
                "warm ms (median / p95)",
                "round trip ms (median / p95)",
                "warm minus round trip ms (median)",
                "cold / warm",
            ],
            [
                [
                    r["label"],
                    spread(r, "cold"),
                    spread(r, "warm"),
                    spread(r, "round_trip"),
                    f"{r['warm_minus_round_trip_ms']:.2f}",
                    f"{r['cold_over_warm']}x",
                ]
                for r in rows
            ],
        ),
        "",
        f"Target (a warm call at most {TARGET_MS:g} ms over the round trip, median): "
        + ("met" if worst <= TARGET_MS else "not met")
        + f", at most {worst:.2f} ms.",
    ]


if __name__ == "__main__":
    main()
