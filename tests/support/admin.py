"""Posting the toolset admin's change form as a browser does.

Signed-in clients: pytest-django's `admin_client` fixture (a superuser) or
`tests.support.web.client_for(person)` for anyone else.
"""

from __future__ import annotations

from typing import Any

from planboard.models import ToolsetTool

# An HTTP toolset as the add form shows it to someone who may also set up programs.
HTTP_TOOLSET = {
    "name": "files",
    "title": "Files",
    "kind": "http",
    "command": "",
    "args": "[]",
    "env": "",
    "roots": "none",
    "url": "https://tools.example.com/mcp",
    "headers": "",
    "auth": "headers",
    "enabled": "on",
    "access": "shared",
}


def tools_inline(*rows: dict[str, str]) -> dict[str, str]:
    """The tools inline: its management form and one row per stored tool (see `tool_row`)."""
    data = {
        "tools-TOTAL_FORMS": str(len(rows)),
        "tools-INITIAL_FORMS": str(len(rows)),
        "tools-MIN_NUM_FORMS": "0",
        "tools-MAX_NUM_FORMS": "1000",
    }
    for index, row in enumerate(rows):
        data |= {f"tools-{index}-{field}": value for field, value in row.items()}
    return data


def tool_row(tool: ToolsetTool, **fields: str) -> dict[str, str]:
    """A stored tool's inline row as shown (its policy), with `fields` changed. A checkbox left
    out, such as `needs_review`, is an unticked box."""
    return {"id": str(tool.pk), "toolset": str(tool.toolset_id), "policy": tool.policy, **fields}


def toolset_form(*, tools: tuple[dict[str, str], ...] = (), **fields: str | None) -> dict[str, Any]:
    """`HTTP_TOOLSET` with `fields` changed, and the tools inline with `tools` as its rows. A
    field set to None is not sent: one the form does not show, or an unticked box."""
    data = {**HTTP_TOOLSET, **fields}
    return {key: value for key, value in data.items() if value is not None} | tools_inline(*tools)
