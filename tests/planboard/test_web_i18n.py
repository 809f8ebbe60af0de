"""English and Chinese: every string the browser shows exists and is translated."""

from __future__ import annotations

import gettext
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from planboard.models import Plan
from planboard.web.strings import STRINGS
from tests.support.web import client_for, page_data

FRONTEND = Path(__file__).resolve().parents[2] / "frontend" / "js"
PLACEHOLDER = re.compile(r"\{(\w+)\}")
# Keys built at run time in the JS (t(`state_${state}`) and the like).
DYNAMIC_KEYS = (
    [f"state_{s}" for s in ("todo", "in_progress", "done", "abandoned")]
    + [f"run_{s}" for s in ("idle", "queued", "running", "waiting_for_user", "succeeded", "failed")]
    + ["run_cancelled"]
    + [
        f"live_{s}{suffix}"
        for s in ("connecting", "live", "reconnecting", "paused", "refused")
        for suffix in ("", "_help")
    ]
    + [f"field_{f}" for f in ("name", "description", "expected_outcome", "outcome")]
    + ["finish_plan_title", "abandon_plan_title", "finish_plan_text", "abandon_plan_text"]
    + ["abandon_reason", "no_plan_read_only", "replay_pause"]
    + ["plan_done_notice", "plan_abandoned_notice"]
    + [f"inbox_kind_{k}" for k in ("approval", "confirmation", "budget", "question")]
    + [
        f"decision_{d}"
        for d in ("approve", "deny", "always_allow", "confirm", "raise_budget", "reply")
    ]
    + [f"channel_{c}" for c in ("browser", "api", "email", "webhook", "expiry", "admin")]
)
# Identical in both languages on purpose.
SAME_IN_CHINESE = {"plan_meta"}


def keys_used_in_frontend() -> set[str]:
    keys: set[str] = set()
    for path in FRONTEND.glob("*.js"):
        keys.update(re.findall(r'\bt\(\s*"([a-z_]+)"', path.read_text()))
        # named("move_up") in board.js wraps t().
        keys.update(re.findall(r'\bnamed\(\s*"([a-z_]+)"', path.read_text()))
    return keys


def test_every_string_the_browser_uses_is_defined() -> None:
    used = keys_used_in_frontend() | set(DYNAMIC_KEYS)
    assert used, "no t(...) calls found: has frontend/js moved?"
    missing = sorted(used - set(STRINGS))
    assert missing == [], f"add these to planboard/web/strings.py: {missing}"


@pytest.mark.parametrize("key", sorted(STRINGS))
def test_browser_string_has_a_chinese_translation(key: str) -> None:
    with translation.override("en"):
        english = str(STRINGS[key])
    with translation.override("zh-hans"):
        chinese = str(STRINGS[key])
    if key not in SAME_IN_CHINESE:
        assert chinese != english, f"{key!r} is not translated"
    # The JS fills the same placeholders in both languages.
    assert set(PLACEHOLDER.findall(chinese)) == set(PLACEHOLDER.findall(english))


def test_pages_follow_the_browser_language(user: Any) -> None:
    client = client_for(user)
    chinese = client.get(reverse("web:sessions"), HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9")
    html = chinese.content.decode()
    assert '<html lang="zh-hans">' in html
    assert "我的会话" in html and "新建会话" in html
    english = client.get(reverse("web:sessions"), HTTP_ACCEPT_LANGUAGE="en-US")
    assert "Your sessions" in english.content.decode()


def test_language_switch_sticks(user: Any) -> None:
    client = client_for(user)
    response = client.post(
        "/i18n/setlang/", {"language": "zh-hans", "next": reverse("web:history")}
    )
    assert response.status_code == 302 and response["Location"] == reverse("web:history")
    page = client.get(reverse("web:history"), HTTP_ACCEPT_LANGUAGE="en-US")
    assert "计划历史" in page.content.decode()
    client.post("/i18n/setlang/", {"language": "en", "next": "/"})
    assert "Plan history" in client.get(reverse("web:history")).content.decode()


def test_browser_strings_come_in_the_page_language(user: Any, plan: Plan) -> None:
    client = client_for(user)
    url = reverse("web:session", args=[plan.session_id])
    strings = page_data(client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans"), "pb-strings")
    assert strings["confirm_title"].startswith("开始执行这个计划")
    assert strings["state_in_progress"] == "进行中"
    english = page_data(client.get(url, HTTP_ACCEPT_LANGUAGE="en"), "pb-strings")
    assert english["confirm_title"] == "Start this plan?"


def test_login_page_in_chinese(client: Client, db: Any) -> None:
    html = client.get("/accounts/login/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "登录 Planboard" in html


LOCALE = Path(__file__).resolve().parents[2] / "locale" / "zh_Hans" / "LC_MESSAGES"


def po_entries() -> dict[str, str]:
    """msgid -> msgstr of the Chinese catalogue (plural forms: the first form)."""
    entries: dict[str, str] = {}
    text = (LOCALE / "django.po").read_text(encoding="utf-8")
    for block in text.split("\n\n")[1:]:
        parts: dict[str, str] = {}
        key = ""
        for line in block.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line.startswith('"'):
                parts[key] += json.loads(line)
                continue
            key, _, rest = line.partition(" ")
            parts[key] = json.loads(rest)
        if "msgid" in parts:
            entries[parts["msgid"]] = parts.get("msgstr", parts.get("msgstr[0]", ""))
    return entries


def test_every_catalogue_entry_is_translated_and_compiled() -> None:
    entries = po_entries()
    assert len(entries) > 100
    untranslated = sorted(msgid for msgid, msgstr in entries.items() if not msgstr)
    assert untranslated == [], f"translate these in django.po: {untranslated}"
    assert "#, fuzzy" not in (LOCALE / "django.po").read_text(encoding="utf-8")
    # The committed .mo matches the .po (run msgfmt after editing the .po).
    with (LOCALE / "django.mo").open("rb") as compiled:
        catalogue = gettext.GNUTranslations(compiled)._catalog  # type: ignore[attr-defined]
    compiled_ids = {key[0] if isinstance(key, tuple) else key for key in catalogue}
    compiled_ids = {msgid.split("\x04")[-1] for msgid in compiled_ids if msgid}
    missing = sorted(set(entries) - compiled_ids)
    assert missing == [], f"django.mo is older than django.po; recompile it: {missing[:5]}"
