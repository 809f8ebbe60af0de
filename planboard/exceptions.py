"""The one exception type for broken business rules.

HTTP maps it to 400 (409 for a stale version), an agent tool returns its message to the
model as `Error: …`, and the agent loop goes on.
"""

from __future__ import annotations

from planboard.shapes import PlanSnapshot


class PlanError(Exception):
    """A request that the plan's rules refuse. The message says what to do instead."""

    status_code = 400

    def __init__(self, message: str, *, code: str = "invalid") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class Forbidden(PlanError):
    """The caller may see the object but not do this to it (HTTP 403)."""

    status_code = 403

    def __init__(self, message: str) -> None:
        super().__init__(message, code="forbidden")


class StaleVersion(PlanError):
    """The caller edited an older version of the plan than the one stored."""

    status_code = 409

    def __init__(self, *, expected: int, current: int, snapshot: PlanSnapshot) -> None:
        super().__init__(
            f"The plan changed since version {expected}; it is now at version {current}. "
            "Reload it and apply your change again.",
            code="stale_version",
        )
        self.snapshot = snapshot
