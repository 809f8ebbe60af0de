"""A stdio toolset is a program the workers run with their own OS user's rights, so setting
one up, turning a toolset into one or changing what it runs (command, args, env) takes
`planboard.run_stdio_toolset` on top of add/change toolset: superusers hold it, no group does
by default. The service enforces it, so the REST API and the admin (test_admin_permissions.py)
both obey; a refused change changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from planboard import services
from planboard.exceptions import Forbidden
from planboard.models import Toolset
from tests.support.permissions import RUN_STDIO_TOOLSET, grant
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db

PROGRAM = {"name": "shell", "kind": "stdio", "command": "/usr/bin/mcp-shell", "args": ["--ro"]}


@pytest.fixture
def program(superuser: Any) -> Toolset:
    return services.toolset_create(user=superuser, env={"TOKEN": "tok-1"}, **PROGRAM)


@pytest.fixture
def endpoint(superuser: Any) -> Toolset:
    return services.toolset_create(
        user=superuser, name="remote", kind="http", url="https://tools.example.com/mcp"
    )


def stored(toolset: Toolset) -> dict[str, Any]:
    return Toolset.objects.filter(pk=toolset.pk).values().get()


def test_adding_a_program_takes_the_permission(staff_admin: Any, superuser: Any) -> None:
    refused = api_client_for(staff_admin).post("/api/toolsets/", PROGRAM, format="json")
    assert refused.status_code == 403
    assert "run_stdio_toolset" in refused.json()["error"]
    assert not Toolset.objects.filter(name="shell").exists()
    # The permission is enough without being a superuser.
    runner = grant(staff_admin, RUN_STDIO_TOOLSET)
    made = api_client_for(runner).post("/api/toolsets/", PROGRAM, format="json")
    assert made.status_code == 201, made.json()
    assert Toolset.objects.get(name="shell").command == "/usr/bin/mcp-shell"


def test_the_permission_alone_adds_nothing(staff: Any) -> None:
    """run_stdio_toolset comes on top of add_toolset, not instead of it."""
    runner = grant(staff, RUN_STDIO_TOOLSET)
    assert api_client_for(runner).post("/api/toolsets/", PROGRAM, format="json").status_code == 403
    assert not Toolset.objects.filter(name="shell").exists()


@pytest.mark.parametrize(
    "change",
    [
        {"command": "/bin/sh"},
        {"args": ["-c", "cat /proc/1/environ"]},
        {"env": {"LD_PRELOAD": "/tmp/evil.so"}},
        {"env": {"TOKEN": None}},
    ],
    ids=["command", "args", "env", "env-removed"],
)
def test_changing_what_a_program_runs_takes_the_permission(
    staff_admin: Any, superuser: Any, program: Toolset, change: dict[str, Any]
) -> None:
    before = stored(program)
    url = f"/api/toolsets/{program.pk}/"
    refused = api_client_for(staff_admin).patch(url, change, format="json")
    assert refused.status_code == 403 and "run_stdio_toolset" in refused.json()["error"]
    assert stored(program) == before
    assert api_client_for(superuser).patch(url, change, format="json").status_code == 200
    assert stored(program) != before


def test_other_settings_of_a_program_stay_open_to_admins(
    staff_admin: Any, program: Toolset
) -> None:
    # The same values again, the title and switching it off change nothing it runs.
    body = {"title": "Shell", "enabled": False, "command": PROGRAM["command"], "args": ["--ro"]}
    response = api_client_for(staff_admin).patch(
        f"/api/toolsets/{program.pk}/", body, format="json"
    )
    assert response.status_code == 200, response.json()
    assert (stored(program)["title"], stored(program)["enabled"]) == ("Shell", False)


def test_an_endpoint_never_becomes_a_program_without_the_permission(
    staff_admin: Any, endpoint: Toolset
) -> None:
    before = stored(endpoint)
    url = f"/api/toolsets/{endpoint.pk}/"
    for change in (
        {"kind": "stdio", "command": "/bin/sh"},
        # Planted on an http toolset, a command would run once someone switched its kind.
        {"command": "/bin/sh"},
        {"env": {"X": "1"}},
    ):
        response = api_client_for(staff_admin).patch(url, change, format="json")
        assert response.status_code == 403, (change, response.json())
    planted = {"name": "web", "kind": "http", "url": "https://w.test/", "command": "/bin/sh"}
    response = api_client_for(staff_admin).post("/api/toolsets/", planted, format="json")
    assert response.status_code == 403
    assert stored(endpoint) == before
    assert not Toolset.objects.filter(name="web").exists()


def test_the_service_refuses_whoever_calls_it(
    user: Any, staff: Any, staff_admin: Any, superuser: Any, endpoint: Toolset
) -> None:
    for person in (None, user, staff, staff_admin):
        with pytest.raises(Forbidden, match="run_stdio_toolset"):
            services.toolset_create(user=person, **PROGRAM)
        with pytest.raises(Forbidden):
            services.toolset_update(
                toolset_id=endpoint.pk, user=person, kind="stdio", command="/bin/sh"
            )
    assert Toolset.objects.get(pk=endpoint.pk).kind == "http"
    assert services.toolset_create(user=superuser, **PROGRAM).kind == "stdio"
    # An inactive holder holds nothing.
    superuser.is_active = False
    with pytest.raises(Forbidden):
        services.toolset_update(toolset_id=endpoint.pk, user=superuser, command="/bin/sh")
