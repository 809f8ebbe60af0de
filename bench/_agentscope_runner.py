"""Replays bench/_tool_sequence.py against AgentScope's in-memory PlanNotebook.

Runs in .venv-bench (see bench/setup_bench_venv.sh), never in the app's venv. Prints one JSON
document: per mode, the seconds each call took. Modes: `toolkit` is what an AgentScope agent
does (parse the model's JSON arguments, dispatch through `Toolkit.call_tool_function`, read the
response text); `direct` awaits the notebook's methods with the parsed arguments.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _tool_sequence import arguments_json, sequence
from agentscope.message import ToolUseBlock
from agentscope.plan import PlanNotebook
from agentscope.tool import Toolkit


def _text(response: Any) -> str:
    return "".join(block.get("text", "") for block in response.content)


async def _historical_id(notebook: PlanNotebook) -> str:
    plans = await notebook.storage.get_plans()
    return plans[-1].id if plans else ""


async def run_toolkit(rounds: int) -> list[tuple[str, float, str]]:
    timings: list[tuple[str, float, str]] = []
    for _ in range(rounds):
        notebook = PlanNotebook()
        toolkit = Toolkit()
        for tool in notebook.list_tools():
            toolkit.register_tool_function(tool)
        for number, (name, args) in enumerate(sequence()):
            raw = arguments_json(args, await _historical_id(notebook))
            started = time.perf_counter()
            call = ToolUseBlock(type="tool_use", id=f"call-{number}", name=name, input={})
            call["input"] = json.loads(raw)
            text = ""
            async for chunk in await toolkit.call_tool_function(call):
                text = _text(chunk)
            timings.append((name, time.perf_counter() - started, text))
    return timings


async def run_direct(rounds: int) -> list[tuple[str, float, str]]:
    timings: list[tuple[str, float, str]] = []
    for _ in range(rounds):
        notebook = PlanNotebook()
        for name, args in sequence():
            raw = arguments_json(args, await _historical_id(notebook))
            started = time.perf_counter()
            response = await getattr(notebook, name)(**json.loads(raw))
            text = _text(response)
            timings.append((name, time.perf_counter() - started, text))
    return timings


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    warmup = max(2, rounds // 20)
    result: dict[str, Any] = {}
    for mode, runner in (("toolkit", run_toolkit), ("direct", run_direct)):
        asyncio.run(runner(warmup))
        timings = asyncio.run(runner(rounds))
        errors = [t for _, _, t in timings if t.startswith("Error") or "Error:" in t]
        result[mode] = {
            "calls": [[name, seconds] for name, seconds, _ in timings],
            "errors": errors[:5],
        }
    import agentscope

    result["version"] = agentscope.__version__
    print(json.dumps(result))


if __name__ == "__main__":
    main()
