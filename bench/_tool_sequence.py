"""The scripted sequence of plan tool calls that bench/tool_overhead.py replays.

Standard library only: both Planboard's venv and the AgentScope venv import it. Every call
is one the two implementations accept and carry out the same way, so each system does the
same work; `HISTORICAL_PLAN_ID` stands for the id each system gave the finished plan.
"""

from __future__ import annotations

import json
from typing import Any

HISTORICAL_PLAN_ID = "<historical-plan-id>"
SUBTASKS = 6


def _subtask(number: int) -> dict[str, str]:
    return {
        "name": f"Step {number}: gather the material",
        "description": f"Collect and check everything step {number} needs, then write it up.",
        "expected_outcome": f"A checked list of the material for step {number}.",
    }


def sequence() -> list[tuple[str, dict[str, Any]]]:
    """The calls of one agent run over a plan: plan, revise, work through it, recover it."""
    calls: list[tuple[str, dict[str, Any]]] = [
        (
            "create_plan",
            {
                "name": "Write the quarterly report",
                "description": "Collect the numbers, draft the sections and review them.",
                "expected_outcome": "A reviewed report in the shared folder.",
                "subtasks": [_subtask(n) for n in range(SUBTASKS)],
            },
        ),
        ("view_subtasks", {"subtask_idx": [0, 1]}),
        ("revise_current_plan", {"subtask_idx": SUBTASKS, "action": "add", "subtask": _subtask(9)}),
        ("revise_current_plan", {"subtask_idx": 2, "action": "revise", "subtask": _subtask(7)}),
        ("revise_current_plan", {"subtask_idx": 3, "action": "delete"}),
        ("update_subtask_state", {"subtask_idx": 0, "state": "in_progress"}),
    ]
    # Finishing a subtask starts the next one in both systems.
    calls += [
        ("finish_subtask", {"subtask_idx": index, "subtask_outcome": f"Result {index} is ready."})
        for index in range(SUBTASKS)
    ]
    calls += [
        ("finish_plan", {"state": "done", "outcome": "The report is written and reviewed."}),
        ("view_historical_plans", {}),
        ("recover_historical_plan", {"plan_id": HISTORICAL_PLAN_ID}),
        ("view_subtasks", {"subtask_idx": [SUBTASKS - 1]}),
        ("finish_plan", {"state": "abandoned", "outcome": "Reopened only to look at it."}),
    ]
    return calls


def arguments_json(args: dict[str, Any], plan_id: Any) -> str:
    """The arguments as a model sends them: one JSON string."""
    filled = {k: (plan_id if v == HISTORICAL_PLAN_ID else v) for k, v in args.items()}
    return json.dumps(filled)
