"""Security: everyone stays in their lane.

- XSS: payloads in every text field (session title, plan and subtask texts, outcomes, user and
  agent messages, tool names) come out of every page as text — HTML-escaped, or as data inside
  `json_script` blocks that cannot be closed early — and the front end never renders data as
  HTML.
- CSRF: writes authenticated by the session cookie need the CSRF token (API and forms); token
  authentication needs none because a foreign page cannot send it.
- Websockets: a foreign Origin is refused at the handshake; a cookie alone (no Origin) is
  anonymous; others' sessions and plans close with 4404.
- Rate limiting: posting messages is throttled per user, with a JSON 429 and nothing stored.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.http import HttpRequest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.throttling import ScopedRateThrottle

from planboard import services
from planboard.models import ChatSession, Message, Plan
from planboard.services import Actor
from tests.support.hostile import (
    MARKERS,
    PAYLOADS,
    audit,
    seed_hostile,
)
from tests.support.invariants import fingerprint

ROOT = Path(__file__).resolve().parents[2]
User = get_user_model()


@pytest.fixture
def hostile_data(user: Any) -> dict[str, Any]:
    return seed_hostile(user)


def pages_of(data: dict[str, Any]) -> list[str]:
    return [
        "/",
        f"/sessions/{data['session'].pk}/",
        "/history/",
        f"/history/plans/{data['old_plan'].pk}/",
        f"/history/plans/{data['plan'].pk}/",
    ]


@pytest.mark.django_db
def test_payloads_in_every_text_field_render_as_text(
    client: Client, user: Any, hostile_data: dict[str, Any]
) -> None:
    client.force_login(user)
    for url in pages_of(hostile_data):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        report = audit(html)
        assert report.problems == [], f"{url}: {report.problems}"
        assert "pb-xss" in html, f"{url} shows none of the texts, so it proves nothing"
        for payload in PAYLOADS:
            # The raw markup never reaches the page; it may appear escaped.
            assert payload not in html or not re.search(r"[<>]", payload), f"{url}: {payload}"
        # The data blocks still carry the texts intact, for the scripts to show as text.
        for block_id, text in report.json_blocks.items():
            json.loads(text)  # never cut short by a '</script>' inside the data
            assert "</" not in text, f"{url} #{block_id} can be closed by its data"


@pytest.mark.django_db
def test_session_page_data_carries_the_texts_unchanged(
    client: Client, user: Any, hostile_data: dict[str, Any]
) -> None:
    """Escaping happens at output: what the board gets is exactly what people wrote."""
    client.force_login(user)
    html = client.get(f"/sessions/{hostile_data['session'].pk}/").content.decode()
    page = json.loads(audit(html).json_blocks["pb-page"])
    dumped = json.dumps(page)
    for payload in PAYLOADS:
        assert json.dumps(payload)[1:-1] in dumped


@pytest.mark.django_db
def test_admin_pages_escape_payloads(admin_client: Client, hostile_data: dict[str, Any]) -> None:
    plan = hostile_data["plan"]
    for url in (
        "/admin/planboard/plan/",
        f"/admin/planboard/plan/{plan.pk}/change/",
        "/admin/planboard/chatsession/",
    ):
        response = admin_client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert not any(p in html for p in PAYLOADS if "<" in p), url
        assert not [p for p in audit(html).problems if any(m in p for m in MARKERS)], url


def test_the_audit_catches_injected_markup() -> None:
    page = '<p>ok</p><img src=x onerror=alert("pb-xss-2")><script>alert(1)</script>'
    assert len(audit(page).problems) == 3


def test_the_front_end_never_renders_data_as_html() -> None:
    """The scripts build the page with DOM nodes and textContent: no HTML sinks, no eval.

    The agent's markdown reaches the page as the nodes DOMPurify returns (markdown.js asks
    for a fragment, so no HTML string is parsed again; its sanitiser is tested in Chromium,
    tests/browser). The vendored libraries are not our code."""
    sinks = re.compile(
        r"\.innerHTML\s*[+]?=|\.outerHTML\s*=|insertAdjacentHTML|document\.write|\beval\(|"
        r"new Function\(|createContextualFragment|setAttribute\(\s*['\"]on"
    )
    scripts = sorted((ROOT / "frontend" / "js").rglob("*.js"))
    assert scripts, "no front-end scripts found"
    found = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in scripts
        for line in path.read_text().splitlines()
        if sinks.search(line)
    ]
    assert found == []
    markdown = (ROOT / "frontend" / "js" / "markdown.js").read_text()
    assert "return purify.sanitize(" in markdown and "RETURN_DOM_FRAGMENT" in markdown


@pytest.mark.django_db
def test_api_json_is_never_sniffed_as_html(client: Client, user: Any, plan: Plan) -> None:
    client.force_login(user)
    response = client.get(f"/api/plans/{plan.pk}/")
    assert response["Content-Type"].startswith("application/json")
    assert response["X-Content-Type-Options"] == "nosniff"


# --- Content-Security-Policy ------------------------------------------------------------------
# script-src and style-src allow only files from this site, so the markup may carry no inline
# script, event handler, style attribute or <style> element.

TEMPLATES = ROOT / "templates"


def test_no_template_has_inline_script_handlers_or_styles() -> None:
    templates = sorted(TEMPLATES.rglob("*.html"))
    assert len(templates) > 10, "no templates found: has templates/ moved?"
    found = []
    for path in templates:
        report = audit(path.read_text())
        found += [f"{path.relative_to(ROOT)}: {p}" for p in report.problems + report.inline_styles]
    assert found == []


def test_the_template_audit_catches_inline_code() -> None:
    report = audit(
        '<button onclick="go()">x</button><script>go()</script><p style="color: red">'
        "<style>p {}</style>"
        '<script type="module" src="/static/js/base.js"></script>'
        '<script id="d" type="application/json">{}</script>'
    )
    assert len(report.problems) == 2 and len(report.inline_styles) == 2


def policy(response: Any) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {
        name: values
        for name, *values in (part.split() for part in header.split(";") if part.strip())
    }


@pytest.mark.django_db
def test_every_page_sends_the_policy_and_passes_it(
    client: Client, user: Any, hostile_data: dict[str, Any]
) -> None:
    anonymous = Client()
    checked = [anonymous.get("/accounts/login/")]
    client.force_login(user)
    checked += [client.get(url) for url in [*pages_of(hostile_data), "/api/docs/"]]
    for response in checked:
        assert response.status_code == 200, response.request["PATH_INFO"]
        rules = policy(response)
        assert rules["default-src"] == ["'self'"]
        assert rules["script-src"] == ["'self'"] and rules["style-src"] == ["'self'"]
        assert rules["img-src"] == ["'self'", "data:"]
        assert rules["object-src"] == ["'none'"] and rules["frame-ancestors"] == ["'none'"]
        assert rules["base-uri"] == ["'self'"] and rules["form-action"] == ["'self'"]
        # The live board's websocket, also for browsers that do not count ws: as 'self'.
        assert rules["connect-src"] == ["'self'", "ws://testserver", "wss://testserver"]
        report = audit(response.content.decode())
        assert report.problems == [] and report.inline_styles == [], response.request["PATH_INFO"]


@pytest.mark.django_db
def test_admin_pages_pass_the_policy(admin_client: Client, hostile_data: dict[str, Any]) -> None:
    plan = hostile_data["plan"]
    for url in ("/admin/", "/admin/planboard/plan/", f"/admin/planboard/plan/{plan.pk}/change/"):
        response = admin_client.get(url)
        assert "'unsafe-inline'" not in response["Content-Security-Policy"], url
        report = audit(response.content.decode())
        assert report.problems == [] and report.inline_styles == [], url


def test_the_websocket_origin_comes_only_from_an_allowed_host() -> None:
    from django.http import HttpResponse
    from django.test import RequestFactory

    from planboard.security import ContentSecurityPolicyMiddleware

    middleware = ContentSecurityPolicyMiddleware(lambda request: HttpResponse("ok"))
    factory = RequestFactory()
    good = middleware(factory.get("/", HTTP_HOST="localhost:8000"))
    assert policy(good)["connect-src"] == ["'self'", "ws://localhost:8000", "wss://localhost:8000"]
    bad = middleware(factory.get("/", HTTP_HOST="evil.example"))
    assert policy(bad)["connect-src"] == ["'self'"]


def test_api_docs_load_their_script_from_a_url(client: Client, user: Any) -> None:
    client.force_login(user)  # the docs are for people signed in
    page = client.get("/api/docs/")
    script_url = re.search(r'<script src="([^"]+script=[^"]*)"', page.content.decode())
    assert script_url, "the Swagger UI start-up script is not loaded from a URL"
    script = client.get(script_url.group(1).replace("&amp;", "&"))
    assert script.status_code == 200 and b"SwaggerUIBundle" in script.content


def test_no_api_docs_page_may_inject_styles(client: Client, user: Any) -> None:
    # One docs page (Swagger UI) under the site's own policy; Redoc, which needed inline
    # styles and loaded its logo from a CDN, is not served.
    client.force_login(user)
    response = client.get("/api/docs/")
    assert policy(response)["style-src"] == ["'self'"]
    assert client.get("/api/redoc/").status_code == 404


# --- XSS in a real browser: the board's scripts render the same data as text -------------

CHROMIUM = Path("/usr/bin/chromium")
BROWSER_PASSWORD = "pw-xss-browser-1"
SEED = """
import json, django
django.setup()
from django.contrib.auth import get_user_model
from tests.support.hostile import seed_hostile
user = get_user_model().objects.create_user("xss", password="{password}")
data = seed_hostile(user)
print(json.dumps({{key: value.pk for key, value in data.items()}}))
"""


def run_catching(work: Any, failures: list[BaseException]) -> None:
    try:
        work()
    except BaseException as exc:
        failures.append(exc)


@pytest.mark.browser
@pytest.mark.slow
def test_payloads_render_as_text_in_the_browser(tmp_path: Path) -> None:
    import os
    import socket
    import subprocess
    import sys
    import threading
    import time
    import urllib.request

    from tests.support.env import require_or_skip

    if not CHROMIUM.exists():
        require_or_skip("Debian's Chromium is missing: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PLANBOARD_", "CELERY_")) and key != "REDIS_URL"
    }
    env.update(
        DATABASE_URL=f"sqlite:///{tmp_path / 'xss.sqlite3'}",
        DJANGO_SETTINGS_MODULE="planboard.settings",
        DJANGO_DEBUG="1",
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        PLANBOARD_RUN_DISPATCHER="tests.support.env.record_dispatch",
        PYTHONPATH=str(ROOT),
    )
    python = sys.executable
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    seeded = subprocess.run(
        [python, "-c", SEED.format(password=BROWSER_PASSWORD)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    ids = json.loads(seeded.stdout.strip().splitlines()[-1])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    daphne = str(Path(python).with_name("daphne"))
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(
        [daphne, "-b", "127.0.0.1", "-p", str(port), "planboard.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/accounts/login/", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, (tmp_path / "server.log").read_text()
                time.sleep(0.3)
        dialogs: list[str] = []
        errors: list[str] = []

        def drive() -> None:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"]
                )
                page = browser.new_page()
                page.set_default_timeout(20_000)
                page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
                page.on("pageerror", lambda error: errors.append(str(error)))
                page.goto(f"{base}/accounts/login/")
                page.fill("#id_username", "xss")
                page.fill("#id_password", BROWSER_PASSWORD)
                page.click("main button[type=submit]")
                page.wait_for_url(f"{base}/")
                pages = [
                    f"/sessions/{ids['session']}/",
                    "/history/",
                    f"/history/plans/{ids['old_plan']}/",
                    f"/history/plans/{ids['plan']}/",
                ]
                for path in ["/", *pages]:
                    page.goto(f"{base}{path}")
                    # The scripts have drawn the data: some payload is on screen, as text.
                    page.get_by_text("pb-xss", exact=False).first.wait_for()
                    injected = page.evaluate(
                        "() => document.querySelectorAll("
                        '\'[onerror], [onload], img[src="x"], svg[onload], script:not([src]):not('
                        '[type="application/json"])\').length'
                    )
                    assert injected == 0, f"{path}: markup from the data became elements"
                # On the session page the payloads are shown literally, as text.
                page.goto(f"{base}/sessions/{ids['session']}/")
                page.get_by_text("pb-xss", exact=False).first.wait_for()
                shown = page.evaluate("() => document.body.innerText")
                board_and_chat = [p for p in PAYLOADS if p in shown]
                assert board_and_chat, "no payload is shown as text on the session page"
                browser.close()

        # In a thread of its own: another test's Playwright session may own this thread's loop.
        failures: list[BaseException] = []
        thread = threading.Thread(target=lambda: run_catching(drive, failures))
        thread.start()
        thread.join(300)
        assert not thread.is_alive(), "the browser check hung"
        if failures:
            raise failures[0]
        assert dialogs == [], f"a payload ran: {dialogs}"
        assert errors == [], f"JavaScript errors: {errors}"
    finally:
        server.terminate()
        server.wait(20)
        log.close()


# --- CSRF ---------------------------------------------------------------------------------------


@pytest.fixture
def csrf_client(user: Any) -> Client:
    client = Client(enforce_csrf_checks=True)
    # The login lockout (django-axes) counts attempts per request: it needs one.
    assert client.login(request=HttpRequest(), username="alice", password="pw-alice-123")
    return client


def csrf_token(client: Client) -> str:
    client.get("/")  # the session list page has a form, so it sets the CSRF cookie
    return client.cookies["csrftoken"].value


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/sessions/", {"title": "Forged"}),
        ("patch", "/api/sessions/{session}/", {"title": "Forged"}),
        ("post", "/api/sessions/{session}/messages/", {"content": "Forged"}),
        ("post", "/api/sessions/{session}/cancel/", None),
        ("patch", "/api/plans/{plan}/", {"name": "Forged"}),
        ("post", "/api/plans/{plan}/subtasks/", {"name": "Forged"}),
        ("patch", "/api/plans/{plan}/subtasks/{subtask}/", {"name": "Forged"}),
        ("delete", "/api/plans/{plan}/subtasks/{subtask}/", None),
    ],
)
def test_cookie_authenticated_api_writes_need_the_csrf_token(
    csrf_client: Client, user: Any, plan: Plan, method: str, path: str, body: Any
) -> None:
    first = plan.subtasks.order_by("position").first()
    url = path.format(session=plan.session_id, plan=plan.pk, subtask=first.pk)
    before = fingerprint(user.pk), ChatSession.objects.count(), Message.objects.count()
    kwargs: dict[str, Any] = {"content_type": "application/json"}
    if body is not None:
        kwargs["data"] = json.dumps(body)
    refused = getattr(csrf_client, method)(url, **kwargs)
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]
    assert (fingerprint(user.pk), ChatSession.objects.count(), Message.objects.count()) == before
    # The same request from the app's own page, with the token, goes through.
    accepted = getattr(csrf_client, method)(url, HTTP_X_CSRFTOKEN=csrf_token(csrf_client), **kwargs)
    assert accepted.status_code < 400, accepted.content


@pytest.mark.django_db
def test_token_authentication_needs_no_csrf_token(user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    token = Token.objects.create(user=user)
    response = client.post(
        "/api/sessions/",
        {"title": "By token"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token.key}",
    )
    assert response.status_code == 201


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("/", {"title": "Forged session"}),
        ("/i18n/setlang/", {"language": "zh-hans"}),
        ("/accounts/logout/", {}),
    ],
)
def test_forms_need_the_csrf_token(csrf_client: Client, path: str, data: dict[str, str]) -> None:
    sessions = ChatSession.objects.count()
    assert csrf_client.post(path, data).status_code == 403
    assert ChatSession.objects.count() == sessions
    # Still signed in: the forged logout did nothing.
    assert csrf_client.get("/").status_code == 200


@pytest.mark.django_db
def test_login_form_needs_the_csrf_token(user: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 403
    assert "_auth_user_id" not in client.session


# --- websockets ---------------------------------------------------------------------------------


def cookie_header(user: Any) -> tuple[bytes, bytes]:
    client = Client()
    client.force_login(user)
    return b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode()


async def connect(path: str, headers: list[tuple[bytes, bytes]]) -> tuple[bool, Any]:
    """(accepted at the handshake, first message or close code)."""
    from planboard.asgi import application

    # Browsers send the Host they connect to; the Origin check compares the two.
    communicator = WebsocketCommunicator(
        application, path, headers=[(b"host", b"testserver"), *headers]
    )
    connected, _ = await communicator.connect(timeout=10)
    if not connected:
        return False, None
    first = await communicator.receive_output(timeout=10)
    await communicator.disconnect()
    if first["type"] == "websocket.close":
        return True, first.get("code")
    return True, json.loads(first["text"])


ALLOWED_ORIGIN = (b"origin", b"http://testserver")
FOREIGN_ORIGIN = (b"origin", b"https://evil.example")


@pytest.mark.django_db(transaction=True)
async def test_websocket_refuses_a_foreign_origin_even_with_valid_credentials(user: Any) -> None:
    from asgiref.sync import sync_to_async

    session = await sync_to_async(services.session_create)(owner=user)
    token = await sync_to_async(Token.objects.create)(user=user)
    path = f"/ws/sessions/{session.pk}/"
    cookie = await sync_to_async(cookie_header)(user)
    auth = (b"authorization", f"Token {token.key}".encode())
    assert await connect(path, [cookie, FOREIGN_ORIGIN]) == (False, None)
    assert await connect(path, [auth, FOREIGN_ORIGIN]) == (False, None)


@pytest.mark.django_db(transaction=True)
async def test_websocket_cookie_counts_only_with_an_allowed_origin(user: Any) -> None:
    from asgiref.sync import sync_to_async

    session = await sync_to_async(services.session_create)(owner=user)
    path = f"/ws/sessions/{session.pk}/"
    cookie = await sync_to_async(cookie_header)(user)
    accepted, first = await connect(path, [cookie, ALLOWED_ORIGIN])
    assert accepted and first["type"] == "snapshot"
    assert first["session"]["id"] == session.pk
    # Without Origin a cookie authenticates nobody: accepted, then closed as not signed in.
    assert await connect(path, [cookie]) == (True, 4403)
    assert await connect(path, []) == (True, 4403)


@pytest.mark.django_db(transaction=True)
async def test_websocket_token_works_without_origin_and_only_for_what_it_may_see(
    user: Any, other_user: Any
) -> None:
    from asgiref.sync import sync_to_async

    mine = await sync_to_async(services.session_create)(owner=user)
    theirs = await sync_to_async(services.session_create)(owner=other_user)
    plan, _ = await sync_to_async(services.plan_create)(
        session_id=theirs.pk, actor=Actor.person(other_user), name="Theirs", subtasks=[]
    )
    token = await sync_to_async(Token.objects.create)(user=user)
    auth = (b"authorization", f"Token {token.key}".encode())
    accepted, first = await connect(f"/ws/sessions/{mine.pk}/", [auth])
    assert accepted and first["type"] == "snapshot"
    assert await connect(f"/ws/sessions/{theirs.pk}/", [auth]) == (True, 4404)
    assert await connect(f"/ws/plans/{plan.pk}/", [auth]) == (True, 4404)
    bad = (b"authorization", b"Token not-a-real-token")
    assert await connect(f"/ws/sessions/{mine.pk}/", [bad]) == (True, 4403)


# --- rate limiting ------------------------------------------------------------------------------


@pytest.fixture
def three_messages_a_minute(monkeypatch: pytest.MonkeyPatch) -> Any:
    # DRF copies the rates when the class is defined; patch the copy the throttle reads.
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", {"messages": "3/min"})
    cache.clear()
    yield
    cache.clear()


@pytest.mark.django_db
def test_message_posting_is_rate_limited_per_user(
    three_messages_a_minute: Any, user: Any, other_user: Any
) -> None:
    session = services.session_create(owner=user)
    client = Client()
    client.force_login(user)
    url = f"/api/sessions/{session.pk}/messages/"
    for number in range(3):
        response = client.post(
            url, {"content": f"Message {number}"}, content_type="application/json"
        )
        assert response.status_code == 202, response.content
    refused = client.post(url, {"content": "One too many"}, content_type="application/json")
    assert refused.status_code == 429
    assert refused.json()["code"] == "throttled" and refused.json()["error"]
    assert int(refused["Retry-After"]) > 0
    assert Message.objects.filter(session=session).count() == 3
    # Reading is not limited, and the limit is per user.
    assert client.get(url).status_code == 200
    theirs = services.session_create(owner=other_user)
    other = Client()
    other.force_login(other_user)
    response = other.post(
        f"/api/sessions/{theirs.pk}/messages/", {"content": "Hi"}, content_type="application/json"
    )
    assert response.status_code == 202


@pytest.mark.django_db
def test_only_the_owner_can_post_to_a_session(user: Any, other_user: Any) -> None:
    session = services.session_create(owner=user)
    intruder = Client()
    intruder.force_login(other_user)
    response = intruder.post(
        f"/api/sessions/{session.pk}/messages/", {"content": "Hi"}, content_type="application/json"
    )
    assert response.status_code == 404
    assert not Message.objects.filter(session=session).exists()
    assert User.objects.count() == 2
