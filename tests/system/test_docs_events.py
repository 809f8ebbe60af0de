"""Every event type the code sends is described in docs/ARCHITECTURE.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVENT_TYPE = re.compile(r'"type": "([a-z_]+\.[a-z_.]+)"')


def test_every_event_type_sent_is_documented() -> None:
    sent = {
        match
        for folder in ("planboard", "agents")
        for path in (ROOT / folder).rglob("*.py")
        for match in EVENT_TYPE.findall(path.read_text(encoding="utf-8"))
    }
    assert {"plan.event", "plan.usage", "access.check"} <= sent  # the pattern still finds them
    documented = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    missing = sorted(t for t in sent if f'type: "{t}"' not in documented)
    assert not missing, f"event types sent but not described in docs/ARCHITECTURE.md: {missing}"
