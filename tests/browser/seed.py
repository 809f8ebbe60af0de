"""Test data for the browser tests, written through the services into the server's database.

Run as `python -m tests.browser.seed` with DATABASE_URL pointing at the browser tests' SQLite
file; prints the ids the tests need as JSON.
"""

from __future__ import annotations

import json
import os
from typing import Any

from tests.browser.seed_blockers import seed_blockers_plan
from tests.browser.seed_cards import seed_cards_plan
from tests.browser.seed_edges import seed_edges
from tests.browser.seed_links import seed_confirmation_link
from tests.browser.seed_list import seed_long_plans
from tests.browser.seed_presence import seed_presence
from tests.browser.seed_showcase import seed_showcase
from tests.browser.seed_templates import seed_templates

PASSWORD = "pw-browser-123"

XSS = '<img src=x onerror="window.__xss=1">'


def step(name: str, description: str, expected_outcome: str) -> dict[str, str]:
    return {"name": name, "description": description, "expected_outcome": expected_outcome}


def seed() -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from planboard import services

    # The demo agent profiles, as `make run` has them: the demo model assigns them to cards.
    from planboard.management.commands.ensure_demo_user import DEMO_PROFILES
    from planboard.models import Team, TeamMembership
    from planboard.services import Actor
    from tests.support.permissions import RUN_STDIO_TOOLSET, admin, grant

    for name, title, description, instructions in DEMO_PROFILES:
        services.profile_create(
            name=name,
            title=title,
            description=description,
            instructions=instructions,
            model="planboard-demo/offline",
            max_steps=20,
        )

    users = get_user_model().objects
    alice = users.create_user("alice", password=PASSWORD)  # team member, owns the plans
    lead = users.create_user("lena", password=PASSWORD)  # leads alice's team
    # Ivy (in no team with her) names lena to answer a session (tests/browser/test_inbox.py).
    services.answerer_consent_set(user=lead, named_by="anyone")
    outsider = users.create_user("oscar", password=PASSWORD)  # in no team with alice
    # An admin: edits any plan through the admins' model permissions; also sets up the stdio
    # test server below, which takes run_stdio_toolset.
    grant(admin("sam", password=PASSWORD), RUN_STDIO_TOOLSET)
    team = Team.objects.create(name="Travel")
    TeamMembership.objects.create(team=team, user=alice, role=TeamMembership.Role.MEMBER)
    TeamMembership.objects.create(team=team, user=lead, role=TeamMembership.Role.LEAD)
    other_team = Team.objects.create(name="Finance")
    TeamMembership.objects.create(team=other_team, user=outsider, role=TeamMembership.Role.LEAD)
    me = Actor.person(alice)

    # A live board for the two-browser test.
    board_session = services.session_create(owner=alice, title="Kyoto trip")
    board_plan, _ = services.plan_create(
        session_id=board_session.pk,
        actor=me,
        name="Plan the Kyoto trip",
        description="Three calm days in Kyoto in spring.",
        expected_outcome="A day-by-day itinerary with bookings.",
        subtasks=[
            step("Book flights", "Compare two airlines", "Tickets"),
            step("Book a ryokan", "Near Gion", "Reservation"),
            step("Plan the days", "Temples and gardens", "Day plans"),
        ],
    )

    # A finished plan with a varied history, for the review and replay tests.
    review_session = services.session_create(owner=alice, title=f"Budget review {XSS}")
    services.message_post(session_id=review_session.pk, author=alice, content=f"Plan it {XSS}")
    services.run_cancel(session_id=review_session.pk)  # no agent in this story
    review_plan, _ = services.plan_create(
        session_id=review_session.pk,
        actor=me,
        name=f"Quarterly budget {XSS}",
        description="Close the books for Q3.",
        expected_outcome="A signed-off budget.",
        subtasks=[
            {"name": "Collect receipts", "description": "", "expected_outcome": "All receipts"},
            {"name": f"Reconcile {XSS}", "description": "Bank vs ledger", "expected_outcome": ""},
            {"name": "Write summary", "description": "", "expected_outcome": "One page"},
        ],
    )
    ids = [s.pk for s in review_plan.subtasks.order_by("position")]
    extra = services.subtask_add(plan_id=review_plan.pk, actor=me, name="Ask finance", index=1)
    services.subtask_move(plan_id=review_plan.pk, actor=me, subtask_id=extra.pk, index=3)
    services.subtask_set_state(
        plan_id=review_plan.pk, actor=me, subtask_id=ids[0], state="in_progress"
    )
    services.subtask_finish(
        plan_id=review_plan.pk, actor=me, subtask_id=ids[0], outcome="42 receipts collected"
    )
    services.subtask_finish(
        plan_id=review_plan.pk, actor=me, subtask_id=ids[1], outcome="Matched to the cent"
    )
    services.subtask_update(
        plan_id=review_plan.pk, actor=me, subtask_id=ids[2], description="Half a page"
    )
    services.subtask_delete(plan_id=review_plan.pk, actor=me, subtask_id=extra.pk)
    services.subtask_finish(
        plan_id=review_plan.pk, actor=me, subtask_id=ids[2], outcome="Summary sent"
    )
    services.plan_finish(plan_id=review_plan.pk, actor=me, state="done", outcome="Budget signed")
    review_plan.refresh_from_db()

    # Every other kind of event: text edits, replacement, recovery (for the replay check).
    offsite_session = services.session_create(owner=alice, title="Offsite")
    offsite, _ = services.plan_create(
        session_id=offsite_session.pk,
        actor=me,
        name="Offsite",
        subtasks=[step("Pick a venue", "", ""), step("Send invites", "", "")],
    )
    services.plan_update_info(
        plan_id=offsite.pk, actor=me, name="Team offsite", description="Two days, one night"
    )
    first, second = offsite.subtasks.order_by("position")
    services.subtask_update(
        plan_id=offsite.pk, actor=me, subtask_id=first.pk, expected_outcome="A signed venue"
    )
    services.subtask_set_state(
        plan_id=offsite.pk, actor=me, subtask_id=second.pk, state="abandoned", outcome="Later"
    )
    services.plan_create(session_id=offsite_session.pk, actor=me, name="Smaller offsite")
    services.plan_recover(session_id=offsite_session.pk, actor=me, plan_id=offsite.pk)

    approval_session = seed_pending_approval(alice, users.get(username="sam"))
    # Toolsets that act as each person: an account through OAuth, and a key (never reached).
    sam = users.get(username="sam")
    calendar = services.toolset_create(
        user=sam,
        name="calendar",
        title="Team calendar",
        kind="http",
        url="https://calendar.example/mcp",
        auth="oauth",
        access="per_person",
    )
    services.toolset_create(
        user=sam,
        name="tickets",
        title="Ticket desk",
        kind="http",
        url="https://tickets.example/mcp",
        access="per_person",
    )
    dressed_up_session = seed_dressed_up_answer(alice)
    prompts_session = seed_mcp_catalog(alice, sam)
    inbox_sessions = seed_inbox(users.create_user("ivy", password=PASSWORD))
    elicitation_session = seed_elicitation(users.create_user("ester", password=PASSWORD))
    confirmation_link = seed_confirmation_link(users.create_user("kenji", password=PASSWORD))
    # A second link that no test uses up: tests/browser/test_every_page.py only looks at it.
    fresh_link = seed_confirmation_link(users.create_user("rui", password=PASSWORD))
    presence = seed_presence(alice, PASSWORD)
    cards = seed_cards_plan(alice)
    # The same plan for the edit-mark tests, where nothing else edits it.
    marks = seed_cards_plan(users.create_user("noa", password=PASSWORD))
    blockers = seed_blockers_plan(alice)
    long_plans = seed_long_plans(users.create_user("lily", password=PASSWORD))
    edges = seed_edges(users.create_user("mika", password=PASSWORD))
    templates = seed_templates(
        users.create_user("tara", password=PASSWORD), users.create_user("tomo", password=PASSWORD)
    )
    showcase = seed_showcase(users.create_user("hana", password=PASSWORD))

    return {
        "password": PASSWORD,
        "approval_session": approval_session,
        "calendar_toolset": calendar.pk,
        "dressed_up_session": dressed_up_session,
        "prompts_session": prompts_session,
        "inbox_sessions": inbox_sessions,
        "elicitation_session": elicitation_session,
        "confirmation_link": confirmation_link,
        "fresh_link": fresh_link,
        "cards": cards,
        "marks": marks,
        "blockers": blockers,
        "long_plans": long_plans,
        "edges": edges,
        "templates": templates,
        "showcase": showcase,
        "board_session": board_session.pk,
        "presence": presence,
        "board_plan": board_plan.pk,
        "review_session": review_session.pk,
        "review_plan": review_plan.pk,
        "review_versions": review_plan.version,
    }


def seed_mcp_catalog(alice: Any, admin: Any) -> int | None:
    """A session using the reference "everything" MCP server (prompts and resources), or None
    without Node.js or `npm ci` (the test that needs it skips)."""
    import shutil
    from pathlib import Path

    from planboard import services
    from planboard.models import Toolset

    root = Path(__file__).resolve().parents[2]
    script = root / "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    node = shutil.which("node")
    if node is None or not script.exists():
        return None
    toolset = services.toolset_create(
        user=admin,
        name="everything",
        title="Everything",
        kind="stdio",
        command=node,
        args=[str(script), "stdio"],
    )
    services.toolset_refresh_tools(toolset_id=toolset.pk)
    # The test server too: its prompt's title, description and text are markup.
    notes = Toolset.objects.get(name="notes")
    session = services.session_create(owner=alice, title="Prompts and resources")
    services.session_set_toolsets(
        session_id=session.pk, toolset_ids=[toolset.pk, notes.pk], user=alice
    )
    return int(session.pk)


def seed_pending_approval(alice: Any, admin: Any) -> int:
    """A session whose run waits for alice to approve one external tool call (the test MCP
    server's `write_note`, which changes things, so its policy is `ask`)."""
    import sys
    from pathlib import Path

    from planboard import services

    server = Path(__file__).resolve().parents[1] / "support" / "mcp_test_server.py"
    toolset = services.toolset_create(
        user=admin,
        name="notes",
        title="Notes",
        kind="stdio",
        command=sys.executable,
        args=[str(server)],
    )
    services.toolset_refresh_tools(toolset_id=toolset.pk)
    session = services.session_create(owner=alice, title="Approve a tool call")
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[toolset.pk], user=alice)
    _, run = services.message_post(session_id=session.pk, author=alice, content="Note the JR pass")
    services.run_start(run_id=run.pk, worker="seed")
    arguments = {"text": "Buy the JR pass before the trip"}
    services.message_record_agent(
        session_id=session.pk,
        run_id=run.pk,
        role="assistant",
        content="I will write that down.",
        tool_calls=[
            {
                "id": "call_seed_note",
                "type": "function",
                "function": {"name": "notes__write_note", "arguments": json.dumps(arguments)},
            }
        ],
    )
    services.tool_call_open(
        session_id=session.pk,
        run_id=run.pk,
        tool_call_id="call_seed_note",
        tool_name="notes__write_note",
        toolset_id=toolset.pk,
        tool="write_note",
        arguments=arguments,
        read_only=False,
        status="pending",
    )
    services.run_pause_for_approval(run_id=run.pk)
    return int(session.pk)


def seed_inbox(ivy: Any) -> dict[str, int]:
    """Two sessions of ivy's that wait on her: a tool call to approve (the notes toolset) and
    a drafted plan to confirm. Her inbox lists both."""
    from planboard import services
    from planboard.models import Toolset
    from planboard.services import Actor

    notes = Toolset.objects.get(name="notes")
    approval = services.session_create(owner=ivy, title="Remember the pass")
    services.session_set_toolsets(session_id=approval.pk, toolset_ids=[notes.pk], user=ivy)
    _, run = services.message_post(session_id=approval.pk, author=ivy, content="Note the pass")
    services.run_start(run_id=run.pk, worker="seed")
    arguments = {"text": f"Renew the rail pass {XSS}"}
    services.message_record_agent(
        session_id=approval.pk,
        run_id=run.pk,
        role="assistant",
        content="I will write that down.",
        tool_calls=[
            {
                "id": "call_inbox_note",
                "type": "function",
                "function": {"name": "notes__write_note", "arguments": json.dumps(arguments)},
            }
        ],
    )
    services.tool_call_open(
        session_id=approval.pk,
        run_id=run.pk,
        tool_call_id="call_inbox_note",
        tool_name="notes__write_note",
        toolset_id=notes.pk,
        tool="write_note",
        arguments=arguments,
        read_only=False,
        status="pending",
    )
    services.run_pause_for_approval(run_id=run.pk)

    confirm = services.session_create(owner=ivy, title="Weekend in Nara")
    _, run = services.message_post(session_id=confirm.pk, author=ivy, content="Plan Nara")
    services.run_start(run_id=run.pk, worker="seed")
    services.plan_create(
        session_id=confirm.pk,
        actor=Actor.agent(run),
        name="Nara weekend",
        subtasks=[step("Book the train", "", ""), step("See the deer park", "", "")],
    )
    services.message_record_agent(
        session_id=confirm.pk,
        run_id=run.pk,
        role="assistant",
        content="Here is the plan. Shall I start?",
    )
    services.run_finish(run_id=run.pk, status="waiting_for_user")
    return {"approval": int(approval.pk), "confirm": int(confirm.pk)}


# Agent text that tries to pass for the app itself: the app's own classes (a toast with an
# Approve button, a link whose ::after covers what it sits in), full-screen styles, ids the
# app's scripts look up, `name`s that clobber, data-/aria- attributes and a `//host` link.
DRESSED_UP_ANSWER = """Your booking is ready.

<div class="toasts" id="board" style="position:fixed;inset:0;z-index:9999;background:#1f2636">\
<div class="toast toast-error" data-status="live" aria-live="assertive">Payment failed. \
<a class="btn btn-primary" id="files" href="https://evil.example/pay">Approve again</a></div></div>

<p class="session-link" id="pb-profiles"><a class="session-link" name="planboard" \
href="https://evil.example/cover">Open the plan</a></p>

<span class="live-dot" id="live-indicator" data-status="offline" hidden>offline</span>

[See the plan](/sessions/), or [continue the trip](//evil.example/continue).
"""

# Plan text and a tool result carrying the same kind of markup.
DRESSED_UP_PLAN = '<div class="dialog" id="chat" style="position:fixed;inset:0">Send now</div>'
DRESSED_UP_TOOL_RESULT = '<div class="toasts" id="chat-pane"><b class="toast">Sent</b></div>'


# A server's question whose words try to be markup: shown as text only.
ELICIT_MESSAGE = 'Where do you stay? <img src=x onerror="window.__xss=1">'
ELICIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "title": "Email <b>address</b>"},
        "nights": {"type": "integer", "title": "Nights", "minimum": 1, "maximum": 14},
        "arrival": {"type": "string", "format": "date", "title": "Arrival"},
        "breakfast": {"type": "boolean", "title": "Breakfast", "description": "Served 7-10"},
        "room": {
            "type": "string",
            "title": "Room",
            "oneOf": [{"const": "r1", "title": "Single"}, {"const": "r2", "title": "Double"}],
        },
        "extras": {
            "type": "array",
            "title": "Extras",
            "items": {"type": "string", "enum": ["parking", "late checkout", "gym"]},
        },
    },
    "required": ["email", "nights"],
}


def seed_elicitation(ester: Any) -> int:
    """A session in which a tool's server waits for ester to fill in a form (elicitation)."""
    from planboard import services

    session = services.session_create(owner=ester, title="Hotel booking")
    services.elicitation_open(
        session_id=session.pk,
        run_id=None,
        tool_call_id=None,
        toolset_id=None,
        toolset_name="hotels",
        mode="form",
        message=ELICIT_MESSAGE,
        requested_schema=ELICIT_SCHEMA,
        timeout_seconds=86400,
    )
    services.elicitation_open(
        session_id=session.pk,
        run_id=None,
        tool_call_id=None,
        toolset_id=None,
        toolset_name="hotels",
        mode="url",
        message="Sign in to the hotel's site, please.",
        url="https://hotels.example/connect?state=s1",
        timeout_seconds=86400,
    )
    return int(session.pk)


def seed_dressed_up_answer(alice: Any) -> int:
    """A session whose agent answer, plan text and tool result try to dress up the page."""
    from planboard import services
    from planboard.services import Actor

    session = services.session_create(owner=alice, title="Dressed-up answer")
    _, run = services.message_post(session_id=session.pk, author=alice, content="Book it")
    services.run_start(run_id=run.pk, worker="seed")
    services.plan_create(
        session_id=session.pk,
        actor=Actor.agent(run),
        name="Book the trip",
        description=DRESSED_UP_PLAN,
        subtasks=[step("Pay", DRESSED_UP_PLAN, DRESSED_UP_PLAN)],
    )
    services.message_record_agent(
        session_id=session.pk,
        run_id=run.pk,
        role="assistant",
        content="",
        tool_calls=[
            {
                "id": "call_seed_send",
                "type": "function",
                "function": {"name": "send", "arguments": "{}"},
            }
        ],
    )
    services.message_record_agent(
        session_id=session.pk,
        run_id=run.pk,
        role="tool",
        content=DRESSED_UP_TOOL_RESULT,
        tool_call_id="call_seed_send",
        tool_name="send",
    )
    services.message_record_agent(
        session_id=session.pk, run_id=run.pk, role="assistant", content=DRESSED_UP_ANSWER
    )
    services.run_finish(run_id=run.pk, status="succeeded")
    return int(session.pk)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planboard.settings")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import django

    django.setup()
    # No agent runs while seeding: the message above only needs to be in the transcript.
    from django.conf import settings

    settings.PLANBOARD_RUN_DISPATCHER = "tests.browser.seed.no_dispatch"
    settings.PLANBOARD_NOTIFICATION_DISPATCHER = "tests.browser.seed_links.no_notification"
    print(json.dumps(seed()))


def no_dispatch(run_id: int, session_id: int | None = None) -> None:
    """Seeding posts a user message; its run is left queued on purpose."""


if __name__ == "__main__":
    main()
