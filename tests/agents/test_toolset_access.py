"""Who uses which toolset with whose credentials: toolsets limited to teams, and per-person
toolsets whose calls act with the session owner's own key (never anyone else's)."""

from __future__ import annotations

from typing import Any

import pytest

from planboard import selectors, services
from planboard.models import AgentRun, ChatSession, Team, TeamMembership, Toolset
from tests.support import db
from tests.support.mcp_servers import API_KEY, HttpServer
from tests.support.runs import drive, post, result_of
from tests.support.scripted import ScriptedModel, call, do, say, tool_calls
from tests.support.web import api_client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def personal(staff_admin: Any, mcp_http: HttpServer) -> Toolset:
    """The test server, whose key each person brings: the toolset itself has none."""
    toolset = services.toolset_create(
        user=staff_admin, name="remote", kind="http", url=mcp_http.url, access="per_person"
    )
    # Listed with a key staff hold for the purpose; calls never use it.
    services.toolset_refresh_tools(
        toolset_id=toolset.pk, tools=[{"name": "echo", "read_only": True}]
    )
    return toolset


def offered(session: ChatSession) -> list[str]:
    return [tool.name for tool in selectors.session_tools(session_id=session.pk)]


def test_a_per_person_toolset_calls_with_the_session_owners_own_key(
    user: Any, other_user: Any, personal: Toolset, mcp_http: HttpServer,
    scripted_model: ScriptedModel,
) -> None:  # fmt: skip
    mine = services.session_create(owner=user, need_user_confirm=False)
    theirs = services.session_create(owner=other_user, need_user_confirm=False)
    for session, owner in ((mine, user), (theirs, other_user)):
        services.session_set_toolsets(session_id=session.pk, toolset_ids=[personal.pk], user=owner)
    # Nobody has connected yet: no session is offered the tools.
    assert offered(mine) == [] and offered(theirs) == []
    listed = api_client_for(user).get("/api/toolsets/").json()
    assert next(t for t in listed if t["id"] == personal.pk)["connected"] is False

    response = api_client_for(user).put(
        f"/api/toolsets/{personal.pk}/credential/",
        {"headers": {"X-Api-Key": API_KEY}},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["connected"] is True and API_KEY not in response.content.decode()
    stored = db.fetch_one("SELECT headers FROM planboard_toolsetcredential", [])
    assert stored is not None and API_KEY not in stored[0]  # encrypted at rest
    assert offered(mine) == ["echo"] and offered(theirs) == []

    scripted_model.script.extend(
        [tool_calls(call("remote__echo", call_id="e", text="hello")), say("Echoed.")]
    )
    run = drive(post(mine, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert result_of(mine, "e") == "hello"
    assert mcp_http.seen_keys and set(mcp_http.seen_keys) == {API_KEY}

    # Forgotten: the tools go away again, and a second delete says there is nothing.
    client = api_client_for(user)
    assert client.delete(f"/api/toolsets/{personal.pk}/credential/").status_code == 204
    assert offered(mine) == []
    again = client.delete(f"/api/toolsets/{personal.pk}/credential/")
    assert again.status_code == 404


def test_a_credential_removed_mid_run_stops_the_call_without_running_it(
    user: Any, personal: Toolset, mcp_http: HttpServer, scripted_model: ScriptedModel
) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[personal.pk], user=user)
    services.toolset_credential_set(
        toolset_id=personal.pk, user=user, headers={"X-Api-Key": API_KEY}
    )

    def forget(_messages: list[dict[str, Any]]) -> None:
        services.toolset_credential_delete(toolset_id=personal.pk, user=user)

    # Forgotten while the model answers with a call of the tool.
    scripted_model.script.extend(
        [do(forget), tool_calls(call("remote__echo", call_id="e", text="x")), say("Ok.")]
    )
    run = drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert result_of(session, "e").startswith("Error: there is no tool named 'remote__echo'")
    assert mcp_http.seen_keys == []
    # Where the call is claimed (after it was offered), the toolset is reached as the
    # session's owner only: without their credential there is nothing to reach.
    toolset = Toolset.objects.get(pk=personal.pk)
    assert selectors.toolset_as_called(toolset, session_id=session.pk) is None
    services.toolset_credential_set(toolset_id=personal.pk, user=user, headers={"X-Api-Key": "k"})
    called = selectors.toolset_as_called(toolset, session_id=session.pk)
    assert called is not None and called.headers == {"X-Api-Key": "k"}


def test_only_per_person_toolsets_take_a_persons_credential(user: Any, staff_admin: Any) -> None:
    shared = services.toolset_create(
        user=staff_admin, name="shared", kind="http", url="https://tools.example.com/mcp"
    )
    response = api_client_for(user).put(
        f"/api/toolsets/{shared.pk}/credential/", {"headers": {"A": "b"}}, format="json"
    )
    assert response.status_code == 400 and "shared credential" in response.json()["error"]
    bad = api_client_for(user).put(
        f"/api/toolsets/{shared.pk}/credential/", {"headers": {"bad name": "b"}}, format="json"
    )
    assert bad.status_code == 400


def test_a_toolset_limited_to_a_team_is_for_its_members_only(
    user: Any, other_user: Any, staff_admin: Any, personal: Toolset
) -> None:
    team = Team.objects.create(name="Research")
    TeamMembership.objects.create(team=team, user=user)
    client = api_client_for(staff_admin)
    limited = client.patch(f"/api/toolsets/{personal.pk}/", {"teams": [team.pk]}, format="json")
    assert limited.status_code == 200 and limited.json()["teams"] == [team.pk]
    assert (
        client.patch(
            f"/api/toolsets/{personal.pk}/", {"teams": [999999]}, format="json"
        ).status_code
        == 400
    )

    # Members see and connect it; others do not even see it.
    seen = {t["id"] for t in api_client_for(user).get("/api/toolsets/").json()}
    assert personal.pk in seen
    assert "teams" not in api_client_for(user).get(f"/api/toolsets/{personal.pk}/").json()
    outsider = api_client_for(other_user)
    assert personal.pk not in {t["id"] for t in outsider.get("/api/toolsets/").json()}
    assert outsider.get(f"/api/toolsets/{personal.pk}/").status_code == 404
    refused = outsider.put(
        f"/api/toolsets/{personal.pk}/credential/", {"headers": {"X-Api-Key": "k"}}, format="json"
    )
    assert refused.status_code == 404
    theirs = services.session_create(owner=other_user)
    with pytest.raises(Exception, match="toolset"):
        services.session_set_toolsets(
            session_id=theirs.pk, toolset_ids=[personal.pk], user=other_user
        )

    # A member who leaves the team: their sessions stop offering it.
    mine = services.session_create(owner=user)
    services.session_set_toolsets(session_id=mine.pk, toolset_ids=[personal.pk], user=user)
    services.toolset_credential_set(toolset_id=personal.pk, user=user, headers={"X-Api-Key": "k"})
    assert offered(mine) == ["echo"]
    TeamMembership.objects.filter(team=team, user=user).delete()
    assert offered(mine) == []


def test_an_owner_deactivated_mid_run_lends_no_credential_to_its_calls(
    user: Any, personal: Toolset, mcp_http: HttpServer, scripted_model: ScriptedModel
) -> None:
    session = services.session_create(owner=user, need_user_confirm=False)
    services.session_set_toolsets(session_id=session.pk, toolset_ids=[personal.pk], user=user)
    services.toolset_credential_set(
        toolset_id=personal.pk, user=user, headers={"X-Api-Key": API_KEY}
    )

    def leave(_messages: list[dict[str, Any]]) -> None:
        user.is_active = False
        user.save(update_fields=["is_active"])

    # Deactivated while the model answers with a call of the tool.
    scripted_model.script.extend(
        [do(leave), tool_calls(call("remote__echo", call_id="e", text="x")), say("Ok.")]
    )
    run = drive(post(session, user))
    assert run.status == AgentRun.Status.SUCCEEDED, run.error
    assert "it was not run" in result_of(session, "e")
    assert mcp_http.seen_keys == []
