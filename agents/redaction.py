"""Toolset secrets never reach the model, the transcript or a person, whatever a server echoes.

A toolset's secrets are its `env` and `headers` values (and the credential part of an
`Authorization`-style value: the token after `Bearer `, the `user:password` inside `Basic …`)
and the credentials in its URL (planboard.url_secrets). Each is hidden as it is and in the
encodings a server is likely to echo it in: base64 (standard and URL-safe, with or without
padding, also where it sits at any offset inside a longer base64 blob such as the `user:secret`
of HTTP basic auth), hex (lower and upper case), URL-encoding and JSON string escaping.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

from planboard.models import Toolset
from planboard.url_secrets import redact_urls_in_text, url_credentials

PLACEHOLDER = "[secret]"
# Shorter values would hide ordinary words; a secret is longer than this in practice.
MIN_SECRET = 4
# A secret's base64 inside a longer blob is matched on the part its own bytes decide alone;
# shorter cores than this would match ordinary text.
MIN_CORE = 8
_SCHEMES = re.compile(r"^(?:Bearer|Token|Basic|Bot|ApiKey|Key)\s+(\S.*)$", re.IGNORECASE)


def toolset_secrets(toolset: Toolset) -> list[str]:
    """Every secret value of a toolset, with the parts a server might echo on their own."""
    values = [*(toolset.env or {}).values(), *(toolset.headers or {}).values()]
    found: list[str] = []
    for value in values:
        if not isinstance(value, str):
            continue
        found.append(value)
        match = _SCHEMES.match(value.strip())
        if match:
            credential = match.group(1).strip()
            found.append(credential)
            found += _basic_parts(credential)
    found += url_credentials(toolset.url or "")
    return [value for value in dict.fromkeys(found) if len(value) >= MIN_SECRET]


def _basic_parts(credential: str) -> list[str]:
    """`user:password` and the password of a basic-auth credential (base64 of them)."""
    try:
        decoded = base64.b64decode(credential, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return []
    _user, colon, password = decoded.partition(":")
    return [decoded, password] if colon and password else []


def _base64_forms(data: bytes) -> set[str]:
    forms: set[str] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        full = encode(data).decode("ascii")
        forms |= {full, full.rstrip("=")}
        # Where the secret starts 0, 1 or 2 bytes into a blob (`user:secret`), the characters
        # that only its own bytes decide: drop the first group shared with what comes before
        # and the last one shared with what comes after.
        for offset in (0, 1, 2):
            encoded = encode(b"\0" * offset + data).decode("ascii")
            start = 4 if offset else 0
            whole = (offset + len(data)) // 3 * 4
            core = encoded[start:whole]
            if len(core) >= MIN_CORE:
                forms.add(core)
    return forms


def secret_forms(secret: str) -> set[str]:
    """`secret` and the encodings of it a server might echo."""
    data = secret.encode("utf-8")
    forms = {secret, data.hex(), data.hex().upper(), quote(secret, safe=""), quote_plus(secret)}
    forms.add(quote(secret))
    forms.add(json.dumps(secret)[1:-1])
    forms.add(json.dumps(secret, ensure_ascii=False)[1:-1])
    forms |= _base64_forms(data)
    return {form for form in forms if len(form) >= MIN_SECRET}


def redactor(secrets: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern matching every form of every secret (longest first), or None."""
    forms: set[str] = set()
    for secret in secrets:
        if len(secret) >= MIN_SECRET:
            forms |= secret_forms(secret)
    if not forms:
        return None
    return re.compile("|".join(re.escape(form) for form in sorted(forms, key=len, reverse=True)))


def redact(text: str, secrets: Iterable[str]) -> str:
    pattern = redactor(secrets)
    return text if pattern is None else pattern.sub(PLACEHOLDER, text)


def redact_for(text: str, toolset: Toolset) -> str:
    """`text` with every form of the toolset's secrets replaced by `[secret]`."""
    return redact(text, toolset_secrets(toolset))


def redact_server_text(text: str, toolset: Toolset) -> str:
    """What a toolset's server said, as the model, the transcript and people may see it: its
    secrets hidden (encoded too), and so are the credentials of any URL the text names."""
    hidden = redact_for(text, toolset)
    return redact_urls_in_text(hidden)
