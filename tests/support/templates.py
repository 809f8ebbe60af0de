"""The Templates page's form as a browser posts it: header fields and one formset row a subtask."""

from __future__ import annotations

from typing import Any

from planboard.models import PlanTemplate


def form_data(template: PlanTemplate, rows: list[dict[str, Any]], **header: Any) -> dict[str, Any]:
    """`template`'s form with `rows` as its subtasks; `header` overrides name, texts or team."""
    data: dict[str, Any] = {
        "name": template.name,
        "description": template.description,
        "expected_outcome": template.expected_outcome,
        "team": "",
        "subtasks-TOTAL_FORMS": len(rows),
        "subtasks-INITIAL_FORMS": len(template.subtasks),
        "subtasks-MIN_NUM_FORMS": 0,
        "subtasks-MAX_NUM_FORMS": 1000,
        **header,
    }
    for i, row in enumerate(rows):
        for key, value in row.items():
            data[f"subtasks-{i}-{key}"] = value
    return data
