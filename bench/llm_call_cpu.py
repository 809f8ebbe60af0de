"""Benchmark 7: the worker's CPU per model call, by the transport litellm uses for
OpenAI-compatible servers (CPU per step decides how many runs a host drives).

`agents.llm.acomplete` streams a tool-call answer from the paced model server
(tests/support/paced_model.py, in a subprocess so its CPU is not counted, answering at once),
`--concurrency` calls at a time, with a request of realistic size: a system prompt, `--turns`
earlier tool calls and results, and `--tools` tool schemas. Rounds alternate between

- litellm's own HTTP handler (Planboard's default), and
- the OpenAI SDK (`PLANBOARD_LLM_OPENAI_SDK=1`, litellm's usual path for `openai/` models),

so both see the same machine load; CPU is this process's `time.process_time()` per call.
The floor beside them: encoding the same request as JSON, which any client must do. A third
row asks litellm's handler for the answer in one piece (not streamed), as a step whose session
nobody watches does: with `--final-words` the answer is as long as a real one, and the rows
show what streaming it costs per piece (benchmark 8 `--watchers`: the same per step).

    .venv/bin/python bench/llm_call_cpu.py [--calls 300] [--rounds 4] [--final-words 0]

Each run appends its row to bench/results/llm_call_cpu.json (every earlier row is kept) and
writes the section of docs/PERFORMANCE.md from this run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as common

# Each row's call: (through the OpenAI SDK, streamed).
MODES = {
    "litellm HTTP handler (default)": (False, True),
    "OpenAI SDK": (True, True),
    "litellm HTTP handler, not streamed": (False, False),
}


def request(turns: int, tools: int, number: int) -> tuple[list[dict[str, Any]], list[Any]]:
    schema = {
        "type": "object",
        "properties": {
            "subtask_idx": {"type": "integer", "description": "which subtask"},
            "names": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["subtask_idx"],
    }
    offered = [
        {
            "type": "function",
            "function": {"name": f"tool_{n}", "description": "A tool. " * 25, "parameters": schema},
        }
        for n in range(tools)
    ]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You plan and carry out work. " * 100},
        {"role": "user", "content": f"Plan the trip [run:b{number}]"},
    ]
    for turn in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{turn}",
                        "type": "function",
                        "function": {"name": "view_subtasks", "arguments": '{"subtask_idx": 0}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "r" * 400})
    messages.append({"role": "user", "content": "<system-hint>Go on.</system-hint>"})
    return messages, offered


async def timed_calls(
    calls: int, concurrency: int, turns: int, tools: int, streamed: bool = True
) -> float:
    from agents import llm

    gate = asyncio.Semaphore(concurrency)

    async def one(number: int) -> None:
        messages, offered = request(turns, tools, number)
        async with gate:
            await llm.acomplete(
                messages=messages,
                tools=offered,
                listener=llm.StreamListener(on_text=lambda _: None) if streamed else None,
            )

    await asyncio.gather(*(one(n) for n in range(min(20, calls))))  # warm the transport
    started = time.process_time()
    await asyncio.gather(*(one(n) for n in range(calls)))
    return (time.process_time() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per round")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per transport")
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--turns", type=int, default=10, help="earlier tool calls in the request")
    parser.add_argument("--tools", type=int, default=15, help="tool schemas in the request")
    parser.add_argument(
        "--final-words",
        type=int,
        default=0,
        help="the answer's length in words beyond its first 4 (7 characters a streamed piece)",
    )
    args = parser.parse_args()
    common.setup_django(common.sqlite_url())
    from django.conf import settings

    server, base_url = common.start_paced_model(final_words=args.final_words)
    try:
        # The deployment's own model settings (a profile's loopback api_base would be refused).
        settings.PLANBOARD_LLM_MODEL = "openai/paced-model"
        settings.PLANBOARD_LLM_API_BASE = base_url
        settings.PLANBOARD_LLM_API_KEY = "sk-bench"
        per_call: dict[str, list[float]] = {name: [] for name in MODES}
        for _ in range(args.rounds):
            for name, (sdk, streamed) in MODES.items():
                settings.PLANBOARD_LLM_OPENAI_SDK = sdk
                cpu = asyncio.run(
                    timed_calls(args.calls, args.concurrency, args.turns, args.tools, streamed)
                )
                per_call[name].append(cpu)
                print(f"{name}: {cpu * 1000:.2f} ms CPU per call", flush=True)
    finally:
        server.kill()

    messages, offered = request(args.turns, args.tools, 0)
    body = {"model": "paced-model", "messages": messages, "tools": offered, "stream": True}
    started = time.process_time()
    for _ in range(1000):
        json.dumps(body)
    floor = (time.process_time() - started) / 1000

    # The paced model's final answer (the request holds `turns` answers already).
    answer = f"Done after {args.turns + 1} answers." + " Details." * args.final_words
    result = {
        "final_words": args.final_words,
        "pieces": -(-len(answer) // 7),
        "per_call": {name: [round(v, 6) for v in values] for name, values in per_call.items()},
        "floor": round(floor, 6),
        "calls": args.calls,
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "request_kib": len(json.dumps(body)) // 1024,
        "turns": args.turns,
        "tools": args.tools,
    }
    write_report(result)


def write_report(result: dict[str, Any]) -> None:
    facts = common.run_facts(services=False)
    row = {"label": f"{4 + result['final_words']}-word answer", **result}
    common.record_run("llm_call_cpu", [row], facts)
    per_call = row["per_call"]
    default = common.median(per_call["litellm HTTP handler (default)"])
    sdk = common.median(per_call["OpenAI SDK"])
    whole = common.median(per_call["litellm HTTP handler, not streamed"])
    table = [
        [name, common.fmt_ms(common.median(v)), common.fmt_ms(min(v)), common.fmt_ms(max(v))]
        for name, v in per_call.items()
    ]
    table.append(["floor: the request encoded as JSON", common.fmt_ms(row["floor"]), "", ""])
    lines = [
        *common.facts_lines(facts),
        "",
        "CPU per `agents.llm.acomplete` call, rows alternating round by round "
        f"({row['rounds']} rounds of {row['calls']} calls, {row['concurrency']} at a time); a "
        f"request of about {row['request_kib']} KiB ({row['turns']} earlier tool calls, "
        f"{row['tools']} tool schemas); an answer of {4 + row['final_words']} words, streamed "
        f"in {row['pieces']} pieces of 7 characters. The floor in the same run: the request "
        "encoded as JSON.",
        "",
        *common.table(["CPU ms per call", "median", "min", "max"], table),
        "",
        f"The OpenAI SDK costs {sdk / default:.1f}x litellm's handler (it checks the request "
        f"against its type hints); streamed, the answer costs {default / whole:.1f}x what it "
        f"costs in one piece ({(default - whole) / row['pieces'] * 1000:.2f} ms a piece), "
        "as a step asks for it when nobody watches the session (benchmark 8). "
        "Other answer lengths: `python -m bench.history llm_call_cpu`.",
    ]
    common.write_section("llm_call_cpu", "7. CPU per model call, by transport", lines)


if __name__ == "__main__":
    main()
