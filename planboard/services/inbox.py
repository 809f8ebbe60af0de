"""The inbox's own writes: "not now" (a per-person snooze), approving identical requests at
once, and who besides the owner may answer a session. Decisions themselves go through the
services that own them (`tool_call_decide`, `message_post`, `session_update`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from planboard import broadcast, selectors
from planboard.exceptions import Forbidden, PlanError
from planboard.models import Channel, ChatSession, InboxSnooze, NotificationSettings, ToolCall
from planboard.services._core import _lock_session
from planboard.services._inbox import _inbox_changed
from planboard.services.runs import _publish_tool_call
from planboard.services.tool_calls import tool_call_decide

SNOOZE_MAX = timedelta(days=30)
ANSWERERS_MAX = 50
BULK_MAX = 100


def inbox_snooze(*, user: User, key: str, until: datetime | None) -> InboxSnooze | None:
    """Hide one item of `user`'s inbox until `until` without deciding it (None: show it
    again). Only the person's own view changes; others who may answer still see it."""
    item = selectors.inbox_item(user=user, key=key)
    if item is None:
        raise PlanError(f"Nothing in your inbox is called {key!r}.", code="not_found")
    with transaction.atomic():
        if until is None:
            InboxSnooze.objects.filter(user=user, item_key=key).delete()
            snooze = None
        else:
            now = timezone.now()
            if until <= now:
                raise PlanError("'until' must be in the future.")
            if until - now > SNOOZE_MAX:
                raise PlanError("'until' may be at most 30 days ahead.")
            snooze, _ = InboxSnooze.objects.update_or_create(
                user=user, item_key=key, defaults={"until": until}
            )
        _inbox_changed(item["session"]["id"], user_ids=[user.pk])
    return snooze


def tool_calls_approve_same(
    *, user: User, keys: list[str], channel: str = Channel.BROWSER
) -> list[ToolCall]:
    """Approve several waiting calls that ask exactly the same (one tool, the same
    arguments) in one transaction: all or none. Each is recorded as its own decision."""
    if not keys or len(keys) > BULK_MAX:
        raise PlanError(f"Name from 1 to {BULK_MAX} items to approve.")
    items = {item["key"]: item for item in selectors.inbox_items(user=user, include_snoozed=True)}
    chosen = []
    for key in dict.fromkeys(keys):
        item = items.get(key)
        if item is None or item["tool_call"] is None:
            raise PlanError(
                f"{key!r} is not a tool call waiting for you (decided already?).",
                code="already_decided",
            )
        chosen.append(item)
    if len({item["tool_call"]["same_request"] for item in chosen if item["tool_call"]}) != 1:
        raise PlanError("Bulk approval is for identical requests only: same tool, same arguments.")
    # Sessions are locked in id order, the one lock order between sessions.
    chosen.sort(key=lambda item: (item["session"]["id"], item["key"]))
    with transaction.atomic():
        return [
            tool_call_decide(
                session_id=item["session"]["id"],
                tool_call_id=item["tool_call"]["tool_call_id"],
                user=user,
                decision="approve",
                channel=channel,
            )
            for item in chosen
            if item["tool_call"] is not None
        ]


def session_set_answerers(*, session_id: int, user: User, usernames: list[str]) -> list[str]:
    """Name the people who may answer the session's waiting items besides its owner (who, or
    staff allowed to change sessions, sets them). Returns the usernames now named.

    Someone added must be active and accept being named by the owner (their `named_by`);
    anyone else gets one and the same error, so naming reveals no username. People already
    named stay without asking again. Those taken off lose what they granted: their "always
    allow" stops letting calls run without asking."""
    if len(usernames) > ANSWERERS_MAX:
        raise PlanError(f"Name at most {ANSWERERS_MAX} people.")
    wanted = sorted({name.strip() for name in usernames if name.strip()})
    with transaction.atomic():
        session = _lock_session(session_id)
        if not selectors.can_act_in_session(user, session.owner_id):
            raise Forbidden(
                "Only the session's owner, or staff allowed to change sessions, names who may "
                "answer it."
            )
        if session.owner.get_username() in wanted:
            raise PlanError("The owner answers their session anyway; name other people.")
        current = {
            a["username"]: a["id"] for a in selectors.session_answerers(session_id=session.pk)
        }
        added = [name for name in wanted if name not in current]
        people = selectors.accepting_answerers(owner_id=session.owner_id, usernames=added)
        refused = sorted(set(added) - {p.get_username() for p in people})
        if refused:
            raise PlanError(
                f"{', '.join(map(repr, refused))} cannot be named to answer this session: "
                "nobody active by that name accepts it (each person chooses who may name "
                "them, in their inbox settings).",
                code="cannot_name",
            )
        before = set(
            ChatSession.answerers.through.objects.filter(chatsession_id=session.pk).values_list(
                "user_id", flat=True
            )
        )
        after = {current[name] for name in wanted if name in current} | {p.pk for p in people}
        session.answerers.set(sorted(after))
        _inbox_changed(session.pk, user_ids=sorted(before | after | {session.owner_id}))
        removed = before - after
        if removed:
            _revoke_grants(session.pk, sorted(removed))
            # Their open sockets on the session re-check access (and close without it).
            groups = [broadcast.user_group(uid) for uid in sorted(removed)]
            transaction.on_commit(lambda: broadcast.check_access(groups))
    return sorted(wanted)


def _revoke_grants(session_id: int, user_ids: list[int]) -> None:
    """The "always allow" these people gave in the session no longer counts: the session's
    calls of those tools ask again (the call records keep who decided them)."""
    grants = ToolCall.objects.select_for_update(no_key=True).filter(
        session_id=session_id, always_allow=True, decided_by_id__in=user_ids
    )
    for record in grants:
        record.always_allow = False
        record.save(update_fields=["always_allow"])
        _publish_tool_call(record)


def answerer_consent_set(*, user: User, named_by: str) -> str:
    """Choose who may name `user` to answer their sessions: `anyone`, `team` (people sharing
    a team with them) or `nobody`. Sessions they are named on already keep them."""
    choices = NotificationSettings.NamedBy
    if named_by not in choices.values:
        raise PlanError(f"'named_by' must be one of {', '.join(choices.values)}.")
    with transaction.atomic():
        prefs, _ = NotificationSettings.objects.select_for_update().get_or_create(user=user)
        prefs.named_by = named_by
        prefs.save(update_fields=["named_by", "updated_at"])
    return named_by
