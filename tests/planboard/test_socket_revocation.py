"""Open websockets forget people who lost access.

Whatever takes access away — team membership, deactivation, token deletion, logout, deletion
of the target — closes the affected sockets at once (4403; 4404 when the target is gone), and
every resync re-checks access. The Origin check compares the whole origin."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client
from rest_framework.authtoken.models import Token

from planboard import services
from planboard.models import ChatSession, Plan, TeamMembership
from planboard.realtime.consumers import RESYNC_BURST
from planboard.realtime.routing import websocket_application
from planboard.services import Actor
from tests.support.permissions import admin_group, grant
from tests.support.sockets import (
    HOST,
    ORIGIN,
    TIMEOUT,
    cookie_for,
    is_version,
    open_socket,
    receive_until,
    token_for,
)

pytestmark = pytest.mark.django_db(transaction=True)
run = database_sync_to_async


def paths(plan: Plan) -> list[str]:
    return [f"/ws/sessions/{plan.session_id}/", f"/ws/plans/{plan.pk}/"]


async def follow(path: str, *auth: tuple[bytes, bytes]) -> WebsocketCommunicator:
    socket = await open_socket(path, ORIGIN, *auth)
    assert (await socket.receive_json_from(timeout=TIMEOUT))["type"] == "snapshot"
    return socket


async def close_code_after(socket: WebsocketCommunicator) -> tuple[int, list[dict[str, Any]]]:
    """Everything the socket still sends, up to its close; returns (code, messages)."""
    messages: list[dict[str, Any]] = []
    while True:
        output = await socket.receive_output(timeout=TIMEOUT)
        if output["type"] == "websocket.close":
            return output["code"], messages
        messages.append(json.loads(output["text"]))


async def still_open(socket: WebsocketCommunicator) -> bool:
    await socket.send_json_to({"type": "ping"})
    return (await socket.receive_json_from(timeout=TIMEOUT)) == {"type": "pong"}


# --- access taken away ------------------------------------------------------------------------


async def test_a_lead_removed_from_the_team_stops_receiving(
    user: Any, lead: Any, plan: Plan
) -> None:
    sockets = [await follow(path, await cookie_for(lead)) for path in paths(plan)]
    token_socket = await follow(paths(plan)[1], await token_for(lead))
    # While in the team, the lead receives the member's changes.
    added = await run(services.subtask_add)(plan_id=plan.pk, actor=Actor.person(user), name="More")
    version = (await run(Plan.objects.get)(pk=added.plan_id)).version
    for socket in [*sockets, token_socket]:
        await receive_until(socket, is_version(plan.pk, version))

    await run(TeamMembership.objects.filter(user=lead).delete)()
    for socket in [*sockets, token_socket]:
        code, messages = await close_code_after(socket)
        assert code == 4403
        assert messages == []
    # Nothing more reaches them, and reconnecting is refused.
    await run(services.subtask_add)(plan_id=plan.pk, actor=Actor.person(user), name="Secret")
    again = await open_socket(paths(plan)[1], ORIGIN, await cookie_for(lead))
    assert (await close_code_after(again))[0] == 4404


async def test_the_member_removed_from_the_team_is_hidden_from_the_lead_too(
    user: Any, lead: Any, plan: Plan
) -> None:
    socket = await follow(paths(plan)[0], await cookie_for(lead))
    await run(TeamMembership.objects.filter(user=user).delete)()
    assert (await close_code_after(socket))[0] == 4403


async def test_the_owner_keeps_their_sockets_when_a_lead_leaves(
    user: Any, lead: Any, plan: Plan
) -> None:
    socket = await follow(paths(plan)[0], await cookie_for(user))
    await run(TeamMembership.objects.filter(user=lead).delete)()
    assert await still_open(socket)


async def test_a_deactivated_user_loses_every_socket(user: Any, plan: Plan) -> None:
    sockets = [await follow(path, await cookie_for(user)) for path in paths(plan)]
    sockets.append(await follow(paths(plan)[0], await token_for(user)))

    def deactivate() -> None:
        user.is_active = False
        user.save(update_fields=["is_active"])

    await run(deactivate)()
    for socket in sockets:
        assert (await close_code_after(socket))[0] == 4403


async def test_a_deleted_token_closes_the_sockets_it_opened_only(user: Any, plan: Plan) -> None:
    token_socket = await follow(paths(plan)[0], await token_for(user))
    cookie_socket = await follow(paths(plan)[0], await cookie_for(user))
    await run(Token.objects.filter(user=user).delete)()
    assert (await close_code_after(token_socket))[0] == 4403
    assert await still_open(cookie_socket)


async def test_logging_out_closes_the_cookie_sockets_of_that_login(user: Any, plan: Plan) -> None:
    browser = Client()
    await run(browser.force_login)(user)
    cookie = (b"cookie", f"sessionid={browser.cookies['sessionid'].value}".encode())
    ending = await follow(paths(plan)[0], cookie)
    other_login = await follow(paths(plan)[0], await cookie_for(user))
    token_socket = await follow(paths(plan)[1], await token_for(user))

    response = await run(browser.post)("/accounts/logout/")
    assert response.status_code in (200, 302)
    assert (await close_code_after(ending))[0] == 4403
    assert await still_open(other_login)
    assert await still_open(token_socket)


async def test_a_deleted_session_closes_its_sockets(user: Any, plan: Plan) -> None:
    socket = await follow(paths(plan)[0], await cookie_for(user))
    await run(ChatSession.objects.filter(pk=plan.session_id).delete)()
    assert (await close_code_after(socket))[0] == 4404


def _take_direct_permissions(staff: Any, group: Group) -> None:
    staff.user_permissions.clear()


def _leave_the_group(staff: Any, group: Group) -> None:
    staff.groups.remove(group)


def _group_dropped_from_the_user_side(staff: Any, group: Group) -> None:
    group.user_set.remove(staff)


def _group_loses_the_permissions(staff: Any, group: Group) -> None:
    group.permissions.remove(*Permission.objects.filter(codename__in=WATCHING))


def _permission_taken_from_every_group(staff: Any, group: Group) -> None:
    for permission in Permission.objects.filter(codename__in=WATCHING):
        permission.group_set.clear()


def _group_deleted(staff: Any, group: Group) -> None:
    group.delete()


WATCHING = ["view_chatsession", "change_chatsession", "view_plan", "change_plan"]


@pytest.mark.parametrize(
    "take_away",
    [
        _take_direct_permissions,
        _leave_the_group,
        _group_dropped_from_the_user_side,
        _group_loses_the_permissions,
        _permission_taken_from_every_group,
        _group_deleted,
    ],
)
async def test_staff_who_lose_the_permission_lose_their_sockets(
    user: Any, staff: Any, plan: Plan, take_away: Callable[[Any, Group], None]
) -> None:
    """Staff follow other people's work through model permissions: however those are taken
    away (their own, their group's, the group itself), the sockets close at once."""

    def give() -> Group:
        group = admin_group()
        staff.groups.add(group)
        grant(staff, "planboard.view_chatsession", "planboard.view_plan")
        return group

    group = await run(give)()
    sockets = [await follow(path, await cookie_for(staff)) for path in paths(plan)]
    # Keep whichever of the two routes the case leaves in place out of the way.
    if take_away is _take_direct_permissions:
        await run(lambda: staff.groups.clear())()
    else:
        await run(lambda: staff.user_permissions.clear())()
    for socket in sockets:  # each change above is itself a re-check: still allowed
        assert await still_open(socket)
    await run(take_away)(staff, group)
    for socket in sockets:
        assert (await close_code_after(socket)) == (4403, [])


async def test_the_owner_keeps_their_sockets_when_permissions_change(
    user: Any, staff_admin: Any, plan: Plan
) -> None:
    socket = await follow(paths(plan)[0], await cookie_for(user))
    await run(lambda: admin_group().permissions.clear())()
    assert await still_open(socket)


async def test_every_resync_rechecks_access(user: Any, lead: Any, plan: Plan) -> None:
    """Even a change no signal reports (a bulk update) is caught at the next resync."""
    socket = await follow(paths(plan)[1], await cookie_for(lead))
    await run(TeamMembership.objects.filter(user=lead).update)(role=TeamMembership.Role.MEMBER)
    await socket.send_json_to({"type": "resync"})
    assert (await close_code_after(socket)) == (4403, [])


# --- bad input from a client ------------------------------------------------------------------


async def test_resync_is_rate_limited_per_socket(user: Any, plan: Plan) -> None:
    socket = await follow(paths(plan)[1], await cookie_for(user))
    for _ in range(RESYNC_BURST):
        await socket.send_json_to({"type": "resync"})
        assert (await socket.receive_json_from(timeout=TIMEOUT))["type"] == "snapshot"
    await socket.send_json_to({"type": "resync"})
    refused = await socket.receive_json_from(timeout=TIMEOUT)
    assert refused["type"] == "error" and refused["code"] == "rate_limited"
    assert await still_open(socket)


async def test_deep_or_huge_messages_get_an_error_frame(user: Any, plan: Plan) -> None:
    socket = await follow(paths(plan)[0], await cookie_for(user))
    for text, code in (
        ("[" * 100_000 + "]" * 100_000, "too_large"),
        ("[" * 5000 + "]" * 5000, "bad_json"),
        ("{not json", "bad_json"),
    ):
        await socket.send_to(text_data=text)
        frame = await socket.receive_json_from(timeout=TIMEOUT)
        assert frame["type"] == "error" and frame["code"] == code, frame
    assert await still_open(socket)


# --- origins ----------------------------------------------------------------------------------


async def handshake(
    path: str, origin: bytes, *auth: tuple[bytes, bytes], scheme: str = "ws"
) -> bool:
    communicator = WebsocketCommunicator(
        websocket_application, path, headers=[HOST, (b"origin", origin), *auth]
    )
    communicator.scope["scheme"] = scheme
    connected, _ = await communicator.connect(timeout=TIMEOUT)
    await communicator.disconnect()
    return connected


async def test_only_the_sites_own_full_origin_is_accepted(user: Any, plan: Plan) -> None:
    cookie = await cookie_for(user)
    path = paths(plan)[0]
    assert await handshake(path, b"http://testserver", cookie)
    # Same host name, another port or scheme: another site.
    for origin in (
        b"http://testserver:31337",
        b"https://testserver",
        b"https://testserver:1",
        b"http://localhost",
        b"null",
    ):
        assert not await handshake(path, origin, cookie), origin
    # Over TLS the page's own origin is https.
    assert await handshake(path, b"https://testserver", cookie, scheme="wss")
    assert not await handshake(path, b"http://testserver", cookie, scheme="wss")


async def test_a_host_outside_allowed_hosts_has_no_own_origin(
    user: Any, plan: Plan, settings: Any
) -> None:
    settings.ALLOWED_HOSTS = ["planboard.example"]
    assert not await handshake(paths(plan)[0], b"http://testserver", await cookie_for(user))


async def test_csrf_trusted_origins_are_accepted(user: Any, plan: Plan, settings: Any) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://board.example", "https://*.corp.example"]
    cookie = await cookie_for(user)
    path = paths(plan)[0]
    assert await handshake(path, b"https://board.example", cookie)
    assert await handshake(path, b"https://team.corp.example", cookie)
    assert not await handshake(path, b"http://board.example", cookie)
    assert not await handshake(path, b"https://board.example:8443", cookie)
    assert not await handshake(path, b"https://corp.example.evil", cookie)


def test_new_users_have_no_sockets_to_check(db: Any) -> None:
    """Creating a user publishes nothing (only changes to existing users can take access)."""
    from planboard import broadcast

    sent: list[Any] = []
    original = broadcast._send
    broadcast._send = lambda groups, message: sent.append((groups, message))  # type: ignore[assignment]
    try:
        get_user_model().objects.create_user("newcomer")
    finally:
        broadcast._send = original  # type: ignore[assignment]
    assert sent == []
