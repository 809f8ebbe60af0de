"""What every browser test holds its pages to: no JavaScript error, no console error (a
Content-Security-Policy violation is one), no request that failed and no answer of 400 or more,
except the failures the test provokes on purpose and names (`Browsing.expect_failure`). A
request the page cancelled itself (`net::ERR_ABORTED`) is no failure.

The watch is on the browser context, so every page of it counts, popups included; the
`browsing` fixture fails the test at teardown with the list of what went wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

CSP_PREFIX = "CSP violation:"
# Reports each Content-Security-Policy violation as a console error, which the watch records.
CSP_REPORTER = (
    "document.addEventListener('securitypolicyviolation', (e) => console.error("
    f"'{CSP_PREFIX} ' + e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile))"
)
# Chromium's console line for every request that failed or answered >= 400; the request itself
# is judged by the response and requestfailed listeners, with the test's expectations.
FAILED_LOAD = "Failed to load resource:"
# The page's own cancellation (it navigated away, or aborted a fetch it no longer needed): no
# server or network failed. A server that drops a connection shows as another net:: error.
CANCELLED = "net::ERR_ABORTED"


def csp_violation(text: str) -> bool:
    return text.startswith(CSP_PREFIX)


@dataclass(frozen=True)
class ExpectedFailure:
    """A failure a test provokes on purpose: an HTTP status (an int) or a network error
    (`net::ERR_...`), for requests whose URL `url` (a regular expression) matches."""

    url: str
    status: int | str

    def matches(self, url: str, status: int | str) -> bool:
        if isinstance(self.status, str) and isinstance(status, str):
            same = status.startswith(self.status)
        else:
            same = self.status == status
        return same and re.search(self.url, url) is not None


@dataclass
class PageWatch:
    """Collects what went wrong in the watched contexts."""

    expected: list[ExpectedFailure] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seen_expected: set[ExpectedFailure] = field(default_factory=set)
    stopped: bool = False

    def expect(self, url: str, status: int | str) -> None:
        self.expected.append(ExpectedFailure(url=url, status=status))

    def attach(self, context: Any, who: str) -> None:
        # Content-Security-Policy violations count as errors: the pages must pass the policy.
        context.add_init_script(CSP_REPORTER)
        context.on("weberror", lambda error: self._add(f"{who}: JavaScript error: {error.error}"))
        context.on("console", lambda message: self._console(who, message))
        context.on("response", lambda response: self._response(who, response))
        context.on("requestfailed", lambda request: self._request_failed(who, request))

    def stop(self) -> None:
        """Closing a context aborts what is in flight: that is no failure of the page."""
        self.stopped = True

    def _add(self, problem: str) -> None:
        if not self.stopped:
            self.problems.append(problem)

    def _is_expected(self, url: str, status: int | str) -> bool:
        for expected in self.expected:
            if expected.matches(url, status):
                self.seen_expected.add(expected)
                return True
        return False

    def _console(self, who: str, message: Any) -> None:
        if message.type != "error":
            return
        url = str((message.location or {}).get("url", ""))
        if message.text.startswith(FAILED_LOAD) and any(
            re.search(expected.url, url) for expected in self.expected
        ):
            return
        self._add(f"{who}: console error: {message.text} ({url})")

    def _response(self, who: str, response: Any) -> None:
        if response.status < 400 or self._is_expected(response.url, response.status):
            return
        request = response.request
        self._add(f"{who}: {request.method} {response.url} answered {response.status}")

    def _request_failed(self, who: str, request: Any) -> None:
        failure = str(request.failure or "failed")
        if failure == CANCELLED or self._is_expected(request.url, failure):
            return
        self._add(f"{who}: {request.method} {request.url} failed: {failure}")
