"""Action links and what guards them: tokens never reach a log, the link page sends no
Referer, and a tool decided only while signed in gets no approve link."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.test import Client
from django.utils import timezone
from django.utils.log import configure_logging

from planboard import services, tasks
from planboard.models import (
    ActionLink,
    ChatSession,
    Notification,
    ToolCall,
    Toolset,
    ToolsetTool,
)
from tests.support.action_links import SITE, links_of, subscribe, token_of
from tests.support.inbox import running, waiting_approval
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db


def test_the_link_page_leaks_no_referrer_even_when_refused(client: Client) -> None:
    page = client.get("/inbox/act/not-a-real-token/")
    assert page.status_code == 404
    assert page["Referrer-Policy"] == "no-referrer" and "no-store" in page["Cache-Control"]
    posted = client.post("/inbox/act/not-a-real-token/")
    assert posted["Referrer-Policy"] == "no-referrer"


# --- tokens never reach logs ----------------------------------------------------------------


@pytest.fixture
def log_output(settings: Any) -> Iterator[io.StringIO]:
    """What every handler of the real logging configuration writes (Django's defaults, then
    settings.LOGGING, as Django applies them), DEBUG on: its console handlers too."""
    settings.DEBUG = True
    configure_logging(django_settings.LOGGING_CONFIG, django_settings.LOGGING)
    loggers = [logging.getLogger(), *map(logging.getLogger, list(logging.root.manager.loggerDict))]
    handlers = {
        h for logger in loggers for h in logger.handlers if isinstance(h, logging.StreamHandler)
    }
    assert handlers
    written = io.StringIO()
    previous = {h: h.setStream(written) for h in handlers}
    try:
        yield written
    finally:
        for handler, stream in previous.items():
            if stream is not None:
                handler.setStream(stream)
        configure_logging(django_settings.LOGGING_CONFIG, django_settings.LOGGING)


def test_a_link_token_is_not_written_to_any_log(
    alice: Any, handed: Any, capture: Any, log_output: io.StringIO
) -> None:
    from daphne.access import AccessLogGenerator

    from planboard.daphne_server import Server, access_log_stream

    subscribe(alice, "approval")
    session = services.session_create(owner=alice, title="Notes")
    with capture(execute=True):
        waiting_approval(session, alice)
    links = links_of(Notification.objects.get(user=alice))
    token = token_of(links["deny"])
    ActionLink.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    # Django logs 4xx answers with their path (django.request): 410 here.
    assert Client().get(links["deny"]).status_code == 410
    assert Client().get(f"/inbox/act/{token[:-1]}x/").status_code == 404
    # daphne's access log, as the web server writes it (through logging, not a raw stream).
    server = Server(  # built as daphne's command line builds it, never run
        application=None,
        endpoints=["tcp:port=0:interface=127.0.0.1"],
        action_logger=AccessLogGenerator(io.StringIO()),
    )
    details = {"client": "203.0.113.9:5", "path": links["deny"], "status": 200, "size": 10}
    server.action_logger("http", "complete", {**details, "method": "POST"})
    AccessLogGenerator(access_log_stream())("http", "complete", {**details, "method": "GET"})
    # runserver's log and any other logger carrying the path.
    logging.getLogger("django.channels.server").warning("HTTP GET %(path)s 404", details)
    logging.getLogger("anything").error("failed at %s", f"{SITE}{links['deny']}?x=1")
    written = log_output.getvalue()
    assert token not in written and token[:-1] not in written
    assert written.count("/inbox/act/") >= 6, written
    assert "POST /inbox/act/" in written and "GET /inbox/act/" in written


# --- decide only while signed in ------------------------------------------------------------


@pytest.fixture
def guarded(staff_admin: Any) -> Toolset:
    toolset = services.toolset_create(
        user=staff_admin, name="bank", kind="http", url="http://bank.test"
    )
    services.toolset_refresh_tools(
        toolset_id=toolset.pk,
        tools=[{"name": "wire", "description": "Send money.", "input_schema": {}}],
    )
    services.toolset_update(
        toolset_id=toolset.pk, user=staff_admin, tool_signed_in_only={"wire": True}
    )
    return toolset


def waiting_wire(session: ChatSession, user: Any, toolset: Toolset) -> ToolCall:
    run = running(session, user)
    record = services.tool_call_open(
        session_id=session.pk,
        run_id=run.pk,
        tool_call_id="call_wire",
        tool_name="bank__wire",
        toolset_id=toolset.pk,
        tool="wire",
        arguments={"amount": 50000},
        read_only=False,
        status="pending",
    )
    services.run_pause_for_approval(run_id=run.pk)
    return record


def test_a_signed_in_only_call_gets_no_approve_link(
    alice: Any, guarded: Toolset, handed: Any, client: Client, capture: Any
) -> None:
    subscribe(alice, "approval")
    session = services.session_create(owner=alice, title="Money")
    with capture(execute=True):
        call = waiting_wire(session, alice, guarded)
    [row] = Notification.objects.filter(user=alice)
    assert tasks.send_notification(row.pk) == "sent"
    [email] = mail.outbox
    assert "Approve:" not in email.body
    assert "approved only by someone signed in" in email.body
    [deny] = re.findall(r"^Deny: https://planboard\.example(/inbox/act/\w+/)$", email.body, re.M)
    assert set(ActionLink.objects.values_list("decision", flat=True)) == {"deny"}
    # A forged (or earlier) approve link for the call is refused.
    token = services.action_links.action_link_token(row.pk, "approve")
    ActionLink.objects.create(
        user=alice,
        session=session,
        item_key=row.item_key,
        decision="approve",
        channel="email",
        token_hash=services.action_links._token_hash(token),
        expires_at=timezone.now() + timedelta(hours=1),
    )
    assert client.get(f"/inbox/act/{token}/").status_code == 404
    refused = client.post(f"/inbox/act/{token}/")
    assert refused.status_code == 404 and b'data-outcome="refused"' in refused.content
    assert ToolCall.objects.get(pk=call.pk).status == "pending"
    # Denying from the mailbox still works.
    assert client.post(deny).status_code == 200
    assert ToolCall.objects.get(pk=call.pk).status == "denied"


def test_signed_in_only_is_set_through_the_toolset_api(
    staff_admin: Any, user: Any, guarded: Toolset
) -> None:
    api = api_client_for(staff_admin)
    [tool] = api.get(f"/api/toolsets/{guarded.pk}/").json()["tools"]
    assert tool["signed_in_only"] is True
    url = f"/api/toolsets/{guarded.pk}/"
    turned = api.patch(url, {"tool_signed_in_only": {"wire": False}}, format="json")
    assert turned.status_code == 200 and turned.json()["tools"][0]["signed_in_only"] is False
    assert not ToolsetTool.objects.get(name="wire").signed_in_only
    bad = api.patch(url, {"tool_signed_in_only": {"wire": "yes"}}, format="json")
    assert bad.status_code == 400
    unknown = api.patch(url, {"tool_signed_in_only": {"nope": True}}, format="json")
    assert unknown.status_code == 400
    # Only people who may change toolsets set it.
    member = api_client_for(user).patch(url, {"tool_signed_in_only": {"wire": True}}, format="json")
    assert member.status_code in (403, 404)
    assert not ToolsetTool.objects.get(name="wire").signed_in_only


def test_signed_in_only_is_set_in_the_admin(admin_client: Client, guarded: Toolset) -> None:
    from tests.support.admin import tool_row, toolset_form

    wire = ToolsetTool.objects.get(name="wire")
    page = admin_client.get(f"/admin/planboard/toolset/{guarded.pk}/change/").content.decode()
    assert "signed_in_only" in page
    # The box left unticked: turned off.
    data = toolset_form(name=None, title="", url="http://bank.test", tools=(tool_row(wire),))
    response = admin_client.post(f"/admin/planboard/toolset/{guarded.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert not ToolsetTool.objects.get(name="wire").signed_in_only
    ticked = (tool_row(wire, signed_in_only="on"),)
    data = toolset_form(name=None, title="", url="http://bank.test", tools=ticked)
    admin_client.post(f"/admin/planboard/toolset/{guarded.pk}/change/", data)
    assert ToolsetTool.objects.get(name="wire").signed_in_only
