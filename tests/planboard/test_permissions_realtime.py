"""Who may open which socket: owners and staff with the model permissions follow, leads review
read-only, others (bare staff too) and anonymous users are refused, and foreign origins are
rejected at the handshake."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model

from planboard import services
from planboard.models import Plan, Team, TeamMembership
from planboard.realtime.routing import websocket_application
from planboard.services import Actor
from tests.support.permissions import grant
from tests.support.sockets import (
    HOST,
    ORIGIN,
    TIMEOUT,
    close_code,
    cookie_for,
    is_version,
    open_socket,
    receive_until,
    run,
    token_for,
)

pytestmark = pytest.mark.django_db(transaction=True)

User = get_user_model()


def paths(plan: Plan) -> list[str]:
    return [f"/ws/sessions/{plan.session_id}/", f"/ws/plans/{plan.pk}/"]


async def test_anonymous_is_refused(plan: Plan) -> None:
    for path in paths(plan):
        socket = await open_socket(path, ORIGIN)
        assert await close_code(socket) == 4403


async def test_cookie_without_origin_is_not_trusted(user: Any, plan: Plan) -> None:
    # Only browsers send cookies by themselves, and browsers always send an Origin.
    for path in paths(plan):
        socket = await open_socket(path, await cookie_for(user))
        assert await close_code(socket) == 4403


async def test_bad_token_is_refused(plan: Plan) -> None:
    for header in (b"Token nope", b"Bearer abc", b"Token"):
        socket = await open_socket(f"/ws/plans/{plan.pk}/", (b"authorization", header))
        assert await close_code(socket) == 4403


async def test_other_users_get_4404(other_user: Any, plan: Plan) -> None:
    for auth in (await cookie_for(other_user), await token_for(other_user)):
        for path in paths(plan):
            socket = await open_socket(path, ORIGIN, auth)
            assert await close_code(socket) == 4404


async def test_unknown_ids_get_4404(user: Any, plan: Plan) -> None:
    for path in ("/ws/sessions/987654/", "/ws/plans/987654/", "/ws/plans/" + "9" * 30 + "/"):
        socket = await open_socket(path, ORIGIN, await cookie_for(user))
        assert await close_code(socket) == 4404


async def test_foreign_origin_is_rejected_at_handshake(user: Any, plan: Plan) -> None:
    for auth in (await cookie_for(user), await token_for(user)):
        for origin in (b"https://evil.example", b"null", b"http://testserver.evil.example"):
            for path in paths(plan):
                communicator = WebsocketCommunicator(
                    websocket_application, path, headers=[HOST, (b"origin", origin), auth]
                )
                connected, _ = await communicator.connect(timeout=TIMEOUT)
                assert not connected


async def test_lead_reviews_read_only(user: Any, lead: Any, plan: Plan) -> None:
    for path in paths(plan):
        socket = await open_socket(path, ORIGIN, await cookie_for(lead))
        snapshot = await socket.receive_json_from(timeout=TIMEOUT)
        assert snapshot["type"] == "snapshot" and snapshot["can_edit"] is False
        assert snapshot["plan"]["id"] == plan.pk
        await run(services.subtask_add, plan_id=plan.pk, actor=Actor.person(user), name="More")
        version = snapshot["plan"]["version"] + 1
        assert (await receive_until(socket, is_version(plan.pk, version)))[-1]["version"] == version
        # Sockets only read: a lead's socket has no way to write.
        await socket.send_json_to({"type": "subtask_add", "name": "sneaky"})
        assert (await socket.receive_json_from(timeout=TIMEOUT))["type"] == "error"
        await socket.disconnect()


async def test_lead_of_another_team_is_refused(user: Any, plan: Plan) -> None:
    outsider = await run(User.objects.create_user, "olaf", password="pw-olaf-12345")

    def lead_other_team() -> None:
        team = Team.objects.create(name="Elsewhere")
        TeamMembership.objects.create(team=team, user=outsider, role=TeamMembership.Role.LEAD)

    await run(lead_other_team)
    for path in paths(plan):
        socket = await open_socket(path, ORIGIN, await cookie_for(outsider))
        assert await close_code(socket) == 4404


async def test_staff_with_the_permissions_see_everything(staff_admin: Any, plan: Plan) -> None:
    for path in paths(plan):
        socket = await open_socket(path, ORIGIN, await token_for(staff_admin))
        snapshot = await socket.receive_json_from(timeout=TIMEOUT)
        assert snapshot["can_edit"] is True
        await socket.disconnect()


async def test_staff_who_may_only_view_watch_read_only(staff: Any, plan: Plan) -> None:
    viewer = await run(grant, staff, "planboard.view_chatsession", "planboard.view_plan")
    for path in paths(plan):
        socket = await open_socket(path, ORIGIN, await token_for(viewer))
        snapshot = await socket.receive_json_from(timeout=TIMEOUT)
        assert snapshot["type"] == "snapshot" and snapshot["can_edit"] is False
        await socket.disconnect()


async def test_bare_staff_see_only_their_own(staff: Any, plan: Plan) -> None:
    for path in paths(plan):
        socket = await open_socket(path, ORIGIN, await token_for(staff))
        assert await close_code(socket) == 4404


async def test_inactive_token_user_is_refused(user: Any, plan: Plan) -> None:
    auth = await token_for(user)

    def deactivate() -> None:
        User.objects.filter(pk=user.pk).update(is_active=False)

    await run(deactivate)
    socket = await open_socket(f"/ws/plans/{plan.pk}/", auth)
    assert await close_code(socket) == 4403
