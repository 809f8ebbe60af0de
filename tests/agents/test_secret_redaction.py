"""A server that echoes a toolset's secret, plainly or encoded, never gets it to the model: the
secret is hidden as it is, base64 (standard, URL-safe, unpadded, inside a longer blob such as
HTTP basic auth's `user:secret`), hex, URL-encoded or JSON-escaped, for env values, header
values (and the token inside `Bearer …`/`Basic …`) and credentials inside the URL."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest

from agents.mcp import calls
from agents.redaction import redact, toolset_secrets
from planboard import services
from planboard.models import Toolset
from tests.support.mcp_servers import API_KEY, HttpServer, stdio_toolset

pytestmark = pytest.mark.django_db

TOKEN = "tok-9f8e7d6c-Zq/+="  # characters that URL-encoding and base64 treat specially


def b64(data: str | bytes, *, urlsafe: bool = False, pad: bool = True) -> str:
    raw = data.encode() if isinstance(data, str) else data
    text = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(raw).decode()
    return text if pad else text.rstrip("=")


def encodings(secret: str) -> dict[str, str]:
    return {
        "plain": secret,
        "base64": b64(secret),
        "base64 unpadded": b64(secret, pad=False),
        "base64 url-safe": b64(secret, urlsafe=True),
        "base64 url-safe unpadded": b64(secret, urlsafe=True, pad=False),
        "basic auth": b64(f"admin:{secret}"),
        "basic auth, other user": b64(f"x:{secret}"),
        "inside a blob": b64(f'{{"user": "me", "key": "{secret}", "n": 1}}'),
        "hex": secret.encode().hex(),
        "HEX": secret.encode().hex().upper(),
        "url-encoded": quote(secret, safe=""),
        "form-encoded": quote_plus(secret),
    }


def leaked(text: str, secret: str) -> list[str]:
    """Which ways of reading `text` still give the secret back."""
    found = [name for name, form in encodings(secret).items() if form in text]
    for blob in re.findall(r"[A-Za-z0-9+/_-]{8,}={0,2}", text):
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                if secret.encode() in decode(blob + "=" * (-len(blob) % 4)):
                    found.append(f"decoded {blob}")
            except ValueError:
                pass
    return found


@pytest.fixture
def local(superuser: Any, tmp_path: Path) -> Toolset:
    return stdio_toolset(superuser, notes=tmp_path / "n.txt", refresh=False, env={"TOKEN": TOKEN})


@pytest.mark.parametrize("encoding", list(encodings(TOKEN)))
def test_an_echoed_env_secret_is_hidden_in_every_encoding(local: Toolset, encoding: str) -> None:
    said = f"here it is: {encodings(TOKEN)[encoding]} (done)"
    output = calls.call_tool(local, "echo", {"text": said})
    assert output.ok and "[secret]" in output.text
    assert leaked(output.text, TOKEN) == []
    assert output.text.startswith("here it is: ") and output.text.endswith(" (done)")


def test_header_tokens_and_url_credentials_are_secrets(
    superuser: Any, mcp_http: HttpServer
) -> None:
    bearer, password, url_key = "bearer-t0k3n-abc", "b4sic-pass-xyz", "url-key-31337"
    toolset = services.toolset_create(
        user=superuser,
        name="remote",
        kind="http",
        url=f"{mcp_http.url}?key={url_key}&team=blue",
        headers={
            "X-Api-Key": API_KEY,
            "Authorization": f"Bearer {bearer}",
            "Proxy-Authorization": f"Basic {b64(f'ops:{password}')}",
        },
    )
    for secret in (bearer, password, url_key, API_KEY):
        for form in (secret, b64(secret), secret.encode().hex()):
            output = calls.call_tool(toolset, "echo", {"text": f"[{form}]"})
            assert output.ok and output.text == "[[secret]]", (secret, form, output.text)
    output = calls.call_tool(toolset, "echo", {"text": f"ops:{password}"})
    assert password not in output.text


def test_short_values_and_ordinary_text_are_left_alone() -> None:
    text = "The sky is blue and the answer is 42."
    assert redact(text, ["42", "abc"]) == text
    assert redact("id 0123456789", ["0123456789"]) == "id [secret]"


def test_the_secrets_of_a_toolset(superuser: Any) -> None:
    toolset = services.toolset_create(
        user=superuser,
        name="r",
        kind="http",
        url="https://u:pw-123456@h.example.com/mcp?key=k-123456",
        headers={"Authorization": "Bearer tk-abcdef"},
    )
    secrets = set(toolset_secrets(toolset))
    assert {"Bearer tk-abcdef", "tk-abcdef", "pw-123456", "k-123456", "u:pw-123456"} <= secrets
