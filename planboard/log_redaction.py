"""A logging filter that hides credentials in every URL a log line carries.

HTTP clients log the URLs they request (httpx2: `HTTP Request: POST https://…?key=…`), the MCP
SDK the endpoint it connects to, tracebacks the URL of a failed request; a toolset's or a
profile's URL may carry a key or `user:password`. `settings.LOGGING` installs this filter on
every handler, so whichever logger a record comes from, what is written says `REDACTED`
instead (planboard.url_secrets).
"""

from __future__ import annotations

import logging

from planboard.url_secrets import redact_urls_in_text


class RedactUrlCredentials(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: let the handler report it as usual
            return True
        redacted = redact_urls_in_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_urls_in_text(record.exc_text)
        return True
