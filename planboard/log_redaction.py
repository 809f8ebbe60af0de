"""A logging filter that hides secrets in what a log line carries: credentials in URLs, and
the token of an action link.

HTTP clients log the URLs they request (httpx2: `HTTP Request: POST https://…?key=…`), the MCP
SDK the endpoint it connects to, tracebacks the URL of a failed request; a toolset's or a
profile's URL may carry a key or `user:password` (planboard.url_secrets). An action link's
path is its secret (`/inbox/act/<token>/`, a decision without a password): Django logs it
with every 4xx answer (`django.request`), runserver and daphne with every request (daphne's
access log goes through logging: `planboard.daphne_server`). `settings.LOGGING` installs this
filter on every handler, so whichever logger a record comes from, what is written says
`REDACTED` instead.
"""

from __future__ import annotations

import logging
import re

from planboard.url_secrets import MASK, redact_urls_in_text

# An action link's token: the path segment after /inbox/act/ (also percent-encoded slashes).
_ACTION_LINK = re.compile(r"(/inbox/act(?:/|%2F))[^/\s?#'\"<>`%]+", re.IGNORECASE)


def redact_text(text: str) -> str:
    """`text` with URL credentials and action-link tokens replaced by REDACTED."""
    text = redact_urls_in_text(text)
    if "/act" not in text.lower():
        return text
    return _ACTION_LINK.sub(lambda match: f"{match.group(1)}{MASK}", text)


class RedactUrlCredentials(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: let the handler report it as usual
            return True
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True
