"""Fixtures of the system tests (real processes, brokers)."""

from tests.support.processes import children, test_broker  # noqa: F401 - fixtures for pytest
