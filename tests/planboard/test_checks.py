"""System checks that catch settings the code cannot honour."""

from __future__ import annotations

import pytest
from django.core import checks
from django.test import override_settings

from planboard.checks import PUBSUB_LAYER


def _ids(messages: list[checks.CheckMessage]) -> list[str]:
    return [m.id for m in messages if m.id]


def _layer(*hosts: str) -> dict[str, object]:
    return {"default": {"BACKEND": PUBSUB_LAYER, "CONFIG": {"hosts": list(hosts)}}}


def test_several_redis_hosts_for_the_pubsub_layer_warn() -> None:
    with override_settings(CHANNEL_LAYERS=_layer("redis://a:6379/0", "redis://b:6379/0")):
        messages = checks.run_checks(tags=[checks.Tags.compatibility])
    assert "planboard.W001" in _ids(messages)
    warning = next(m for m in messages if m.id == "planboard.W001")
    assert warning.level == checks.WARNING
    assert "2 Redis hosts" in warning.msg


def test_one_redis_host_or_another_layer_is_fine() -> None:
    with override_settings(CHANNEL_LAYERS=_layer("redis://a:6379/0")):
        assert "planboard.W001" not in _ids(checks.run_checks())
    in_memory = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    with override_settings(CHANNEL_LAYERS=in_memory):
        assert "planboard.W001" not in _ids(checks.run_checks())


def test_a_sqlite_without_returning_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """planboard/sql.py's insert and step counter need RETURNING (SQLite 3.35+)."""
    monkeypatch.setattr("planboard.checks._uses_sqlite", lambda: True)
    monkeypatch.setattr("sqlite3.sqlite_version_info", (3, 34, 1))
    monkeypatch.setattr("sqlite3.sqlite_version", "3.34.1")
    old = [m for m in checks.run_checks() if m.id == "planboard.E003"]
    assert len(old) == 1 and old[0].level == checks.ERROR and "3.34.1" in old[0].msg
    monkeypatch.setattr("sqlite3.sqlite_version_info", (3, 35, 0))
    assert "planboard.E003" not in _ids(checks.run_checks())
    monkeypatch.setattr("sqlite3.sqlite_version_info", (3, 20, 0))
    monkeypatch.setattr("planboard.checks._uses_sqlite", lambda: False)  # PostgreSQL
    assert "planboard.E003" not in _ids(checks.run_checks())
