"""A finished plan as a markdown document, for people (admin export, downloads)."""

from __future__ import annotations

from planboard.shapes import PlanEventData, PlanSnapshot

_BOX = {
    "todo": "[ ]",
    "in_progress": "[ ] (in progress)",
    "done": "[x]",
    "abandoned": "[-] (abandoned)",
}


def plan_document(snapshot: PlanSnapshot, events: list[PlanEventData]) -> str:
    """The plan with every subtask's outcome, followed by its change history."""
    lines = [f"# {snapshot['name']}", ""]
    for label, key in (
        ("Description", "description"),
        ("Expected outcome", "expected_outcome"),
        ("State", "state"),
        ("Outcome", "outcome"),
        ("Owner", None),
        ("Created", "created_at"),
        ("Finished", "finished_at"),
    ):
        value = snapshot["owner"]["username"] if key is None else snapshot.get(key)
        if value:
            lines.append(f"- **{label}:** {value}")
    lines += ["", "## Subtasks", ""]
    for subtask in snapshot["subtasks"]:
        lines.append(f"{subtask['index']}. {_BOX[subtask['state']]} **{subtask['name']}**")
        for label, text in (
            ("Description", subtask["description"]),
            ("Expected", subtask["expected_outcome"]),
            ("Outcome", subtask["outcome"]),
        ):
            if text:
                lines.append(f"   - {label}: {text}")
    if not snapshot["subtasks"]:
        lines.append("_No subtasks._")
    lines += ["", "## History", ""]
    for event in events:
        actor = event["actor"]
        who = actor["username"] or (
            f"agent run {actor['run_id']}" if actor["kind"] == "agent" else "system"
        )
        lines.append(f"- v{event['version']} {event['created_at']} — {who}: {event['action']}")
    return "\n".join(lines) + "\n"
