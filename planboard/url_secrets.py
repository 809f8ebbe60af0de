"""Credentials inside a URL (a toolset's `url`, a profile's `api_base`) are secrets.

The user name and password (`https://user:pass@host/…`), every query value (`?key=…`; the
names may show) and the fragment are shown back only as `REDACTED` (`redact_url`). A URL sent
back with those placeholders keeps the stored values at the same places (`restore_url`) as
long as it still points at the same destination (scheme, host and port); pointing elsewhere
with placeholders is refused, because stored credentials never follow a change of destination.
`url_credentials` lists the values, for redacting tool output; `redact_urls_in_text` hides
them in any text (log lines).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import SplitResult, unquote, unquote_plus, urlsplit, urlunsplit

from planboard.exceptions import PlanError

MASK = "REDACTED"
_DEFAULT_PORTS = {"http": 80, "https": 443}
# A URL inside free text (a log line, an error message): up to whitespace, a quote or a bracket.
_URL_IN_TEXT = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`]+")

Slot = tuple[str, int]  # (query name, its occurrence), ("", n) for the n-th bare value


def _split(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return None
    return parts


def destination(url: str) -> tuple[str, str, int | None]:
    """Where a URL connects: scheme, host and port (a scheme's default port filled in)."""
    parts = _split(url)
    if parts is None:
        return ("", url, None)
    scheme = parts.scheme.lower()
    return (scheme, parts.hostname or "", parts.port or _DEFAULT_PORTS.get(scheme))


def _userinfo(parts: SplitResult) -> tuple[str | None, str | None, str]:
    """Raw user, raw password (None when absent) and the host part of the netloc."""
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at:
        return None, None, parts.netloc
    user, colon, password = userinfo.partition(":")
    return user, (password if colon else None), hostport


def _query_pairs(query: str) -> Iterator[tuple[Slot, str, str | None]]:
    """Each query segment as (slot, raw name, raw value or None for a bare segment)."""
    seen: dict[str, int] = {}
    for segment in query.split("&") if query else []:
        name, equals, value = segment.partition("=")
        key = name if equals else ""
        index = seen.get(key, 0)
        seen[key] = index + 1
        yield (key, index), name, (value if equals else segment)


def _rebuild(
    parts: SplitResult,
    user: str | None,
    password: str | None,
    hostport: str,
    query: str,
    fragment: str,
) -> str:
    userinfo = ""
    if user is not None:
        userinfo = user + (f":{password}" if password is not None else "") + "@"
    return urlunsplit((parts.scheme, userinfo + hostport, parts.path, query, fragment))


def _mask(value: str | None) -> str | None:
    return MASK if value else value


def redact_url(url: str) -> str:
    """The URL as people may see it: user, password, query values and fragment replaced."""
    parts = _split(url)
    if parts is None or not parts.netloc:
        return url
    user, password, hostport = _userinfo(parts)
    query = "&".join(
        f"{name}={_mask(value)}" if key else (_mask(value) or "")
        for (key, _), name, value in _query_pairs(parts.query)
    )
    fragment = _mask(parts.fragment) or ""
    return _rebuild(parts, _mask(user), _mask(password), hostport, query, fragment)


def _placeholder_count(url: str) -> int:
    parts = _split(url)
    if parts is None:
        return 0
    user, password, _ = _userinfo(parts)
    values = [user, password, parts.fragment or None]
    values += [value for _, _, value in _query_pairs(parts.query)]
    return sum(1 for value in values if value == MASK)


def restore_url(url: str, stored: str, *, field: str, limit: int = 500) -> str:
    """`url` with each `REDACTED` placeholder replaced by the stored value at the same place.

    Refused (PlanError) when the URL now points at another destination, or a placeholder has
    no stored value to stand for: stored credentials never go anywhere new."""
    if _placeholder_count(url) == 0:
        return url
    parts, old = _split(url), _split(stored)
    if parts is None or old is None or destination(url) != destination(stored):
        raise PlanError(
            f"'{field}' points at a new destination but still holds {MASK} placeholders: "
            "stored credentials are not sent to a new address. Write them out in full."
        )
    user, password, hostport = _userinfo(parts)
    old_user, old_password, _ = _userinfo(old)
    old_values = {slot: value for slot, _, value in _query_pairs(old.query)}

    def stored_value(placeholder: str | None, previous: str | None, where: str) -> str | None:
        if placeholder != MASK:
            return placeholder
        if not previous:
            raise PlanError(
                f"'{field}' holds {MASK} for {where}, but no value is stored there; write the "
                "value itself."
            )
        return previous

    segments: list[str] = []
    for slot, name, value in _query_pairs(parts.query):
        where = f"the query value {name!r}" if slot[0] else "a query value"
        kept = stored_value(value, old_values.get(slot), where)
        segments.append(f"{name}={kept}" if slot[0] else (kept or ""))
    restored = _rebuild(
        parts,
        stored_value(user, old_user, "the user name"),
        stored_value(password, old_password, "the password"),
        hostport,
        "&".join(segments),
        stored_value(parts.fragment, old.fragment, "the fragment") or "",
    )
    if len(restored) > limit:
        raise PlanError(f"'{field}' would be longer than {limit} characters with its credentials.")
    return restored


def url_credentials(url: str) -> list[str]:
    """The secret values a URL carries, raw and decoded (for redacting what tools say)."""
    parts = _split(url)
    if parts is None:
        return []
    user, password, _ = _userinfo(parts)
    raw = [user, password, parts.fragment or None]
    raw += [value for _, _, value in _query_pairs(parts.query)]
    found: list[str] = []
    for value in raw:
        if not value:
            continue
        for form in (value, unquote(value), unquote_plus(value)):
            if form not in found:
                found.append(form)
    if user:
        basic = f"{unquote(user)}:{unquote(password or '')}"
        found.append(basic)
    return found


def redact_urls_in_text(text: str) -> str:
    """Every URL inside `text` with its credentials replaced (log lines, error messages)."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda match: redact_url(match.group(0)), text)
