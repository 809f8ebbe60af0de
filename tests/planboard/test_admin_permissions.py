"""The admin obeys the same permissions as the REST API.

Without `run_stdio_toolset` the toolset admin offers no way to make or change a program: the
add form has no stdio kind and no command, args or env, a stdio toolset's are read-only, and a
forged form field is ignored (the service would refuse it anyway). Staff who may only view
toolsets never see a secret value. Actions need the permission of the change they make."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from planboard import services
from planboard.models import AgentRun, Plan, Toolset
from tests.support.admin import toolset_form
from tests.support.permissions import RUN_STDIO_TOOLSET, grant
from tests.support.web import client_for

pytestmark = pytest.mark.django_db

ENV_SECRET = "tok-env-5e1f"
HEADER_SECRET = "Bearer hdr-9a8b"


def form(**fields: str | None) -> dict[str, Any]:
    """The add form as posted by staff without `run_stdio_toolset`: it has no program fields."""
    return toolset_form(**{"command": None, "args": None, "env": None, **fields})


PROGRAM_FIELDS = ('name="command"', 'name="args"', 'name="env"')


@pytest.fixture
def program(superuser: Any) -> Toolset:
    return services.toolset_create(
        user=superuser,
        name="shell",
        kind="stdio",
        command="/usr/bin/mcp-shell",
        args=["--ro"],
        env={"SHELL_TOKEN": ENV_SECRET},
    )


def stored(toolset: Toolset) -> dict[str, Any]:
    return Toolset.objects.filter(pk=toolset.pk).values().get()


# --- stdio toolsets ---------------------------------------------------------------------------


def test_without_the_permission_the_add_form_offers_no_program(staff_admin: Any) -> None:
    client = client_for(staff_admin)
    page = client.get("/admin/planboard/toolset/add/").content.decode()
    assert 'name="url"' in page
    assert not any(field in page for field in PROGRAM_FIELDS)
    assert 'value="stdio"' not in page

    forged = form(kind="stdio", command="/bin/sh", args='["-c", "id"]', env='{"A": "1"}')
    response = client.post("/admin/planboard/toolset/add/", forged)
    assert response.status_code == 200  # the form again, with the error
    assert "Select a valid choice" in response.content.decode()
    assert not Toolset.objects.filter(name="files").exists()

    # Fields the form does not offer are not taken from a forged post either.
    planted = form(command="/bin/sh", args='["-c", "id"]', env='{"A": "1"}')
    assert client.post("/admin/planboard/toolset/add/", planted).status_code == 302
    made = Toolset.objects.get(name="files")
    assert (made.kind, made.command, made.args, made.env) == ("http", "", [], {})


def test_without_the_permission_a_program_is_read_only(staff_admin: Any, program: Toolset) -> None:
    client = client_for(staff_admin)
    url = f"/admin/planboard/toolset/{program.pk}/change/"
    page = client.get(url).content.decode()
    assert "/usr/bin/mcp-shell" in page and "SHELL_TOKEN" in page  # shown, read-only
    assert ENV_SECRET not in page
    assert not any(field in page for field in PROGRAM_FIELDS)

    before = stored(program)
    forged = form(
        name="shell",
        title="Shell",
        kind="http",
        command="/bin/sh",
        args='["-c", "cat /proc/self/environ"]',
        env='{"LD_PRELOAD": "/tmp/x.so"}',
    )
    assert client.post(url, forged).status_code == 302
    after = stored(program)
    assert after["title"] == "Shell"  # what they may change, changed
    for key in ("kind", "command", "args", "env"):
        assert after[key] == before[key], key


def test_with_the_permission_the_admin_sets_up_programs(staff_admin: Any) -> None:
    runner = grant(staff_admin, RUN_STDIO_TOOLSET)
    client = client_for(runner)
    page = client.get("/admin/planboard/toolset/add/").content.decode()
    assert all(field in page for field in PROGRAM_FIELDS) and 'value="stdio"' in page
    program = form(
        name="shell", kind="stdio", url="", command="/usr/bin/mcp-shell", args='["--ro"]',
        env=f'{{"SHELL_TOKEN": "{ENV_SECRET}"}}',
    )  # fmt: skip
    response = client.post("/admin/planboard/toolset/add/", program)
    assert response.status_code == 302, response.content.decode()[-2000:]
    made = Toolset.objects.get(name="shell")
    assert (made.kind, made.command, made.args) == ("stdio", "/usr/bin/mcp-shell", ["--ro"])
    assert made.env == {"SHELL_TOKEN": ENV_SECRET}


def test_staff_who_may_only_view_toolsets_never_see_secret_values(
    staff: Any, superuser: Any, program: Toolset
) -> None:
    remote = services.toolset_create(
        user=superuser, name="remote", kind="http", url="https://r.test/mcp",
        headers={"Authorization": HEADER_SECRET},
    )  # fmt: skip
    viewer = client_for(grant(staff, "planboard.view_toolset"))
    for toolset in (program, remote):
        response = viewer.get(f"/admin/planboard/toolset/{toolset.pk}/change/")
        assert response.status_code == 200
        page = response.content.decode()
        assert ENV_SECRET not in page and "hdr-9a8b" not in page
    page = viewer.get(f"/admin/planboard/toolset/{remote.pk}/change/").content.decode()
    assert "Authorization" in page  # the name, as everywhere else


# --- actions ----------------------------------------------------------------------------------


def act(client: Client, model: str, action: str, pk: int) -> None:
    client.post(f"/admin/planboard/{model}/", {"action": action, "_selected_action": [pk]})


def test_abandoning_plans_takes_change_plan(staff: Any, plan: Plan) -> None:
    viewer = grant(staff, "planboard.view_plan")
    act(client_for(viewer), "plan", "abandon_plans", plan.pk)
    assert Plan.objects.get(pk=plan.pk).state != "abandoned"
    act(client_for(grant(viewer, "planboard.change_plan")), "plan", "abandon_plans", plan.pk)
    assert Plan.objects.get(pk=plan.pk).state == "abandoned"


def test_refreshing_tools_takes_change_toolset(staff: Any, chat_session: Any) -> None:
    workspace = Toolset.objects.get(kind=Toolset.Kind.BUILTIN)
    assert workspace.refreshed_at is None
    viewer = grant(staff, "planboard.view_toolset")
    act(client_for(viewer), "toolset", "refresh_tools", workspace.pk)
    assert Toolset.objects.get(pk=workspace.pk).refreshed_at is None
    act(
        client_for(grant(viewer, "planboard.change_toolset")),
        "toolset",
        "refresh_tools",
        workspace.pk,
    )
    assert Toolset.objects.get(pk=workspace.pk).refreshed_at is not None


def test_cancelling_runs_takes_change_chatsession(staff: Any, user: Any, chat_session: Any) -> None:
    _, run = services.message_post(session_id=chat_session.pk, author=user, content="Go")
    viewer = grant(staff, "planboard.view_agentrun")
    act(client_for(viewer), "agentrun", "cancel_runs", run.pk)
    assert AgentRun.objects.get(pk=run.pk).status == "queued"
    act(
        client_for(grant(viewer, "planboard.change_chatsession")), "agentrun", "cancel_runs", run.pk
    )
    assert AgentRun.objects.get(pk=run.pk).status == "cancelled"
