"""Nobody reaches more than their permissions grant. Staff powers come from Django's
model permissions, as in the admin; `is_staff` alone grants a member's rights and nothing more.

Every REST write is listed with the model permissions staff need to make it on someone else's
objects. For each: bare staff are refused and nothing changes; staff holding exactly those
permissions succeed; staff holding every other admin permission but one of them are refused
and nothing changes; superusers succeed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from planboard import selectors, services
from planboard.models import (
    AgentProfile,
    AgentRun,
    ChatSession,
    Message,
    Plan,
    SessionToolset,
    ToolCall,
    Toolset,
)
from tests.support.permissions import ADMIN_APPS, grant
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db

User = get_user_model()


@dataclass
class World:
    plan: Plan
    toolset: Toolset
    workspace: Toolset
    profile: AgentProfile

    @property
    def session_id(self) -> int:
        assert self.plan.session_id is not None
        return self.plan.session_id

    def subtask_id(self) -> int:
        return selectors.plan_snapshot(plan_id=self.plan.pk)["subtasks"][0]["id"]


@pytest.fixture
def world(user: Any, plan: Plan, superuser: Any) -> World:
    """Alice's session and plan, with a run waiting for her decision on a tool call; a toolset
    and an agent profile set up by a superuser."""
    files = services.toolset_create(
        user=superuser, name="files", kind="http", url="https://tools.example.com/mcp"
    )
    assert plan.session_id is not None
    _, run = services.message_post(session_id=plan.session_id, author=user, content="Go")
    services.run_start(run_id=run.pk, worker="w")
    services.tool_call_open(
        session_id=plan.session_id, run_id=run.pk, tool_call_id="c1", tool_name="files__write",
        toolset_id=files.pk, tool="write", arguments={}, read_only=False, status="pending",
    )  # fmt: skip
    services.run_pause_for_approval(run_id=run.pk)
    return World(
        plan=plan,
        toolset=files,
        workspace=Toolset.objects.get(kind=Toolset.Kind.BUILTIN),
        profile=services.profile_create(name="researcher", description="Finds things"),
    )


def everything() -> tuple[Any, ...]:
    """All that any of the writes below could change."""
    plans = Plan.objects.order_by("pk").values_list("pk", flat=True)
    return (
        [selectors.plan_snapshot(plan_id=pk) for pk in plans],
        list(ChatSession.objects.order_by("pk").values()),
        list(Message.objects.order_by("pk").values_list("pk", "content")),
        list(AgentRun.objects.order_by("pk").values_list("pk", "status", "cancel_requested")),
        list(ToolCall.objects.order_by("pk").values_list("pk", "status", "decided_by")),
        list(Toolset.objects.order_by("pk").values()),
        list(AgentProfile.objects.order_by("pk").values()),
        list(SessionToolset.objects.order_by("pk").values_list("session_id", "toolset_id")),
    )


Call = Callable[[APIClient, World], Any]

# What each write needs when the object is not yours: (model permissions, the request).
WRITES: dict[str, tuple[tuple[str, ...], Call]] = {
    "session settings": (
        ("planboard.change_chatsession",),
        lambda c, w: c.patch(f"/api/sessions/{w.session_id}/", {"title": "Changed"}, "json"),
    ),
    "session toolsets": (
        ("planboard.change_chatsession",),
        lambda c, w: c.patch(f"/api/sessions/{w.session_id}/", {"toolsets": []}, "json"),
    ),
    "post message": (
        ("planboard.change_chatsession",),
        lambda c, w: c.post(f"/api/sessions/{w.session_id}/messages/", {"content": "hi"}, "json"),
    ),
    "cancel run": (
        ("planboard.change_chatsession",),
        lambda c, w: c.post(f"/api/sessions/{w.session_id}/cancel/"),
    ),
    "decide a tool call": (
        ("planboard.change_toolcall",),
        lambda c, w: c.post(
            f"/api/sessions/{w.session_id}/tool-calls/c1/decision/", {"decision": "deny"}, "json"
        ),
    ),
    "edit plan": (
        ("planboard.change_plan",),
        lambda c, w: c.patch(f"/api/plans/{w.plan.pk}/", {"name": "Changed"}, "json"),
    ),
    "finish plan": (
        ("planboard.change_plan",),
        lambda c, w: c.patch(
            f"/api/plans/{w.plan.pk}/", {"state": "abandoned", "outcome": "No"}, "json"
        ),
    ),
    "add subtask": (
        ("planboard.change_plan", "planboard.add_subtask"),
        lambda c, w: c.post(f"/api/plans/{w.plan.pk}/subtasks/", {"name": "New"}, "json"),
    ),
    "edit subtask": (
        ("planboard.change_plan", "planboard.change_subtask"),
        lambda c, w: c.patch(
            f"/api/plans/{w.plan.pk}/subtasks/{w.subtask_id()}/", {"name": "Renamed"}, "json"
        ),
    ),
    "delete subtask": (
        ("planboard.change_plan", "planboard.delete_subtask"),
        lambda c, w: c.delete(f"/api/plans/{w.plan.pk}/subtasks/{w.subtask_id()}/"),
    ),
    "add toolset": (
        ("planboard.add_toolset",),
        lambda c, w: c.post(
            "/api/toolsets/", {"name": "web", "kind": "http", "url": "https://web.test/"}, "json"
        ),
    ),
    "change toolset": (
        ("planboard.change_toolset",),
        lambda c, w: c.patch(f"/api/toolsets/{w.toolset.pk}/", {"title": "Changed"}, "json"),
    ),
    "refresh toolset": (
        ("planboard.change_toolset",),
        lambda c, w: c.post(f"/api/toolsets/{w.workspace.pk}/refresh/"),
    ),
    "remove toolset": (
        ("planboard.delete_toolset",),
        lambda c, w: c.delete(f"/api/toolsets/{w.toolset.pk}/"),
    ),
    "add profile": (
        ("planboard.add_agentprofile",),
        lambda c, w: c.post("/api/profiles/", {"name": "writer"}, "json"),
    ),
    "change profile": (
        ("planboard.change_agentprofile",),
        lambda c, w: c.patch(f"/api/profiles/{w.profile.pk}/", {"instructions": "x"}, "json"),
    ),
    "remove profile": (
        ("planboard.delete_agentprofile",),
        lambda c, w: c.delete(f"/api/profiles/{w.profile.pk}/"),
    ),
}


def staff_with(username: str, perms: list[str]) -> Any:
    staff = User.objects.create_user(username, is_staff=True)
    return grant(staff, *perms) if perms else staff


def all_admin_permissions_but(missing: str) -> list[str]:
    every = Permission.objects.filter(content_type__app_label__in=ADMIN_APPS).exclude(
        codename="run_stdio_toolset"
    )
    names = [f"{p.content_type.app_label}.{p.codename}" for p in every.select_related()]
    return [name for name in names if name != missing]


def assert_refused(response: Any) -> None:
    assert response.status_code in (403, 404), response.content
    assert response.json()["error"]


@pytest.mark.parametrize("endpoint", WRITES)
def test_bare_staff_are_refused_and_nothing_changes(
    world: World, staff: Any, endpoint: str
) -> None:
    _, call = WRITES[endpoint]
    before = everything()
    assert_refused(call(api_client_for(staff), world))
    assert everything() == before


@pytest.mark.parametrize("endpoint", WRITES)
def test_staff_with_exactly_the_permissions_succeed(world: World, endpoint: str) -> None:
    perms, call = WRITES[endpoint]
    before = everything()
    response = call(api_client_for(staff_with("exact", list(perms))), world)
    assert response.status_code in (200, 201, 202, 204), response.content
    assert everything() != before


@pytest.mark.parametrize(
    ("endpoint", "missing"),
    [(endpoint, perm) for endpoint, (perms, _) in WRITES.items() for perm in perms],
)
def test_every_other_permission_is_not_enough(world: World, endpoint: str, missing: str) -> None:
    _, call = WRITES[endpoint]
    almost = staff_with("almost", all_admin_permissions_but(missing))
    before = everything()
    assert_refused(call(api_client_for(almost), world))
    assert everything() == before


@pytest.mark.parametrize("endpoint", WRITES)
def test_superusers_succeed(world: World, superuser: Any, endpoint: str) -> None:
    _, call = WRITES[endpoint]
    before = everything()
    response = call(api_client_for(superuser), world)
    assert response.status_code in (200, 201, 202, 204), response.content
    assert everything() != before


def test_staff_without_is_staff_rights_are_members(world: World, user: Any) -> None:
    """Model permissions make a difference only for active staff, as in the admin."""
    holder = User.objects.create_user("holder")  # not staff
    holder = grant(holder, "planboard.change_plan", "planboard.view_plan")
    before = everything()
    assert api_client_for(holder).get(f"/api/plans/{world.plan.pk}/").status_code == 404
    assert_refused(WRITES["edit plan"][1](api_client_for(holder), world))
    assert everything() == before


# --- reads: other people's sessions and plans, configuration ----------------------------------

SESSION_READS: dict[str, Call] = {
    "session": lambda c, w: c.get(f"/api/sessions/{w.session_id}/"),
    "transcript": lambda c, w: c.get(f"/api/sessions/{w.session_id}/messages/"),
    "tool calls": lambda c, w: c.get(f"/api/sessions/{w.session_id}/tool-calls/"),
    "files": lambda c, w: c.get(f"/api/sessions/{w.session_id}/files/"),
}
PLAN_READS: dict[str, Call] = {
    "plan": lambda c, w: c.get(f"/api/plans/{w.plan.pk}/"),
    "history": lambda c, w: c.get(f"/api/plans/{w.plan.pk}/events/"),
}


@pytest.mark.parametrize(
    ("reads", "model"),
    [
        pytest.param(SESSION_READS, "chatsession", id="sessions"),
        pytest.param(PLAN_READS, "plan", id="plans"),
    ],
)
def test_reading_others_work_takes_the_view_or_change_permission(
    world: World, staff: Any, reads: dict[str, Call], model: str
) -> None:
    viewer = staff_with("viewer", [f"planboard.view_{model}"])
    changer = staff_with("changer", [f"planboard.change_{model}"])  # implies view, as in admin
    for name, call in reads.items():
        assert call(api_client_for(staff), world).status_code == 404, name
        assert call(api_client_for(viewer), world).status_code == 200, name
        assert call(api_client_for(changer), world).status_code == 200, name


CONFIGURATION = {"command", "args", "env_names", "url", "header_names"}


def test_toolset_configuration_is_for_staff_who_may_view_toolsets(
    world: World, user: Any, staff: Any
) -> None:
    services.toolset_update(toolset_id=world.toolset.pk, user=None, enabled=False)
    for person in (user, staff):
        rows = api_client_for(person).get("/api/toolsets/").json()
        assert [t["name"] for t in rows] == ["workspace"]  # the disabled one is hidden
        assert not CONFIGURATION & set(rows[0])
        detail = api_client_for(person).get(f"/api/toolsets/{world.toolset.pk}/")
        assert detail.status_code == 404
    viewer = staff_with("viewer", ["planboard.view_toolset"])
    rows = {t["name"]: t for t in api_client_for(viewer).get("/api/toolsets/").json()}
    assert set(rows) == {"files", "workspace"}
    assert CONFIGURATION <= set(rows["files"])
    assert rows["files"]["url"] == "https://tools.example.com/mcp"
    # Seeing is not changing.
    assert_refused(api_client_for(viewer).patch(f"/api/toolsets/{world.toolset.pk}/", {}, "json"))


PUBLIC_PROFILE = {"id", "name", "title", "description", "model"}


def test_profiles_show_their_setup_only_to_staff_who_may_view_profiles(
    user: Any, staff: Any, superuser: Any, lead: Any
) -> None:
    profile = services.profile_create(
        name="researcher",
        title="Researcher",
        description="Finds things",
        model="openai/gpt-4o-mini",
        api_base="https://team:hunter2@llm.internal.example/v1",
        api_key_env="PLANBOARD_LLM_KEY_RESEARCH",
        instructions="Use the internal wiki at wiki.internal.example.",
        max_steps=5,
        budget_usd=3,
    )
    for person in (user, lead, staff):
        client = api_client_for(person)
        (listed,) = client.get("/api/profiles/").json()
        detail = client.get(f"/api/profiles/{profile.pk}/").json()
        for body in (listed, detail):
            assert set(body) == PUBLIC_PROFILE
            assert body["model"] == "openai/gpt-4o-mini" and body["title"] == "Researcher"
        text = client.get("/api/profiles/").content.decode()
        assert (
            "hunter2" not in text
            and "PLANBOARD_LLM_KEY_RESEARCH" not in text
            and "wiki" not in text
        )
    viewer = staff_with("viewer", ["planboard.view_agentprofile"])
    for person in (viewer, superuser):
        body = api_client_for(person).get(f"/api/profiles/{profile.pk}/").json()
        # Staff who may view profiles see the endpoint, its credentials redacted.
        assert body["api_base"] == "https://REDACTED:REDACTED@llm.internal.example/v1"
        assert (body["api_key_env"], body["max_steps"]) == ("PLANBOARD_LLM_KEY_RESEARCH", 5)
        assert "wiki" in body["instructions"]


def test_the_session_names_its_profile_and_nothing_more(user: Any) -> None:
    services.profile_create(
        name="researcher", api_base="https://team:hunter2@llm.internal.example/v1"
    )
    session = services.session_create(owner=user, title="Trip", profile="researcher")
    for url in (f"/api/sessions/{session.pk}/", f"/sessions/{session.pk}/"):
        client = APIClient()
        client.force_login(user)
        response = client.get(url)
        assert response.status_code == 200
        assert "researcher" in response.content.decode()
        assert "hunter2" not in response.content.decode()


# --- the schema -------------------------------------------------------------------------------


def test_the_schema_and_its_docs_need_sign_in(user: Any) -> None:
    anonymous = APIClient()
    schema = anonymous.get("/api/schema/")
    assert schema.status_code == 401 and schema["WWW-Authenticate"].startswith("Token")
    # The error, in the schema's own format (YAML), and nothing of the schema.
    assert b"not_authenticated" in schema.content and b"paths" not in schema.content
    for page in ("/api/docs/",):
        response = anonymous.get(page)
        assert response.status_code == 302
        assert response["Location"] == f"/accounts/login/?next={page}"
    token = Token.objects.create(user=user)
    signed = APIClient()
    signed.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = signed.get("/api/schema/")
    assert response.status_code == 200 and b"openapi" in response.content
