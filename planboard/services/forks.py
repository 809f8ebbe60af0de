"""Forks: "continue from here" — a new session whose plan is a plan as it stood at a version of
its history.

The plan at that version comes from the history replay (`selectors.plan_snapshot_at`). The new
session, its plan (version 1, one `plan_forked` event) and the `PlanFork` link row are written
in one transaction; the source plan and session are only read, never locked or changed, so a
fork never waits on a running agent and the source's version never moves.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils.translation import gettext

from planboard import selectors
from planboard.exceptions import PlanError
from planboard.models import NAME_MAX, ChatSession, Plan, PlanFork, SessionToolset, State, SubTask
from planboard.services._core import Actor, _clean_text, _record, _set_current_plan
from planboard.services.toolsets import set_session_toolsets
from planboard.services.workspace import enable_workspace
from planboard.shapes import PlanEventData, PlanSnapshot

# How many of the source's changes the new session's agent is told of (the newest), and how
# long a text in them may be: an account, not a copy of the history.
FORK_ACCOUNT_EVENTS = 30
ACCOUNT_TEXT_MAX = 200
ACCOUNT_LIST_MAX = 20


def _clean_point(version: Any, subtask_id: Any) -> tuple[int | None, int | None]:
    if (version is None) == (subtask_id is None):
        raise PlanError("Give either 'version' or 'subtask_id' to say where to continue from.")
    for field, value in (("version", version), ("subtask_id", subtask_id)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise PlanError(f"'{field}' must be a whole number.")
    return version, subtask_id


def _fork_version(source: Plan, version: int | None, subtask_id: int | None) -> int:
    """The version to continue from: the one given, or the one that finished the subtask."""
    if subtask_id is not None:
        if not selectors.subtask_in_history(plan_id=source.pk, subtask_id=subtask_id):
            raise PlanError(
                f"Subtask {subtask_id} is not part of plan {source.pk}.", code="unknown_subtask"
            )
        version = selectors.version_finishing_subtask(plan_id=source.pk, subtask_id=subtask_id)
        if version is None:
            raise PlanError(
                f"Subtask {subtask_id} of plan {source.pk} was never finished; "
                "continue from a version instead.",
                code="unknown_version",
            )
    assert version is not None  # _clean_point: one of the two is given
    if not 1 <= version <= source.version:
        raise PlanError(
            f"Plan {source.pk} has versions 1 to {source.version}; there is no version {version}.",
            code="unknown_version",
        )
    return version


def _snapshot_at(source: Plan, version: int) -> PlanSnapshot:
    try:
        snapshot = selectors.plan_snapshot_at(plan_id=source.pk, version=version)
    except ValueError:  # a gap in the history: the replay cannot get there
        snapshot = None
    if snapshot is None or snapshot["version"] != version:
        raise PlanError(
            f"Part of plan {source.pk}'s history is missing; it cannot be continued from "
            f"version {version}.",
            code="history_incomplete",
        )
    return snapshot


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _trimmed(value: Any, depth: int = 0) -> Any:
    """A before/after value as the account keeps it: short texts, short lists, shallow."""
    if isinstance(value, str):
        return value if len(value) <= ACCOUNT_TEXT_MAX else value[: ACCOUNT_TEXT_MAX - 1] + "…"
    if isinstance(value, list):
        return [_trimmed(v, depth + 1) for v in value[:ACCOUNT_LIST_MAX]] if depth < 2 else []
    if isinstance(value, dict):
        return {str(k): _trimmed(v, depth + 1) for k, v in value.items()} if depth < 2 else {}
    return value


def _account(
    source: Plan, version: int, id_map: dict[int, int]
) -> dict[str, list[dict[str, Any]] | int]:
    """The source's newest changes up to `version`, without their patches (the new plan has
    its own), subtask ids mapped to the new plan's so the hint names them by their place."""
    events, earlier = selectors.plan_events_window(
        plan_id=source.pk, last=FORK_ACCOUNT_EVENTS, through=version
    )
    return {"events": [_account_event(e, id_map) for e in events], "earlier": earlier}


def _account_event(event: PlanEventData, id_map: dict[int, int]) -> dict[str, Any]:
    subtask_id = event["subtask_id"]
    return {
        "version": event["version"],
        "action": event["action"],
        "actor": event["actor"],
        # A subtask deleted before the fork point keeps its old id: no new subtask has it.
        "subtask_id": id_map.get(subtask_id, subtask_id) if subtask_id is not None else None,
        "before": _trimmed(event["before"]),
        "after": _trimmed(event["after"]),
        "created_at": event["created_at"],
    }


def _copy_blockers(snapshot: PlanSnapshot, created: list[SubTask], id_map: dict[int, int]) -> None:
    """What each subtask waited for at the fork point, as the new plan's ids (before the fork
    event is recorded, so its patch shows them). An older event without the key, or an id the
    snapshot does not hold, gives no dependency rather than one on a stranger's subtask."""
    changed = []
    for item, new in zip(snapshot["subtasks"], created, strict=True):
        waits = [id_map[pk] for pk in item.get("blocked_by") or () if pk in id_map]
        if waits:
            new.blocked_by = waits
            changed.append(new)
    if changed:
        SubTask.objects.bulk_update(changed, ["blocked_by"])


def _new_session(source: Plan, *, by: User, title: str) -> ChatSession:
    """The new session, with the source session's settings (a profile only while enabled)."""
    settings: dict[str, Any] = {}
    origin = source.session
    if origin is not None:
        settings = {
            "need_user_confirm": origin.need_user_confirm,
            "max_subtasks": origin.max_subtasks,
            "language": origin.language,
            "budget_usd": origin.budget_usd,
            "budget_tokens": origin.budget_tokens,
            "profile": origin.profile if origin.profile and origin.profile.enabled else None,
        }
    return ChatSession.objects.create(owner=by, title=title, plan_mode=True, **settings)


def _copy_toolsets(session: ChatSession, source: Plan, *, by: User) -> None:
    """The source session's toolsets that the new owner may use; a plan without a session
    gets what a new session gets."""
    if source.session_id is None:
        enable_workspace(session.pk)
        return
    wanted = SessionToolset.objects.filter(session_id=source.session_id).values("toolset_id")
    usable = list(
        selectors.toolsets_usable_by(by).filter(pk__in=wanted).values_list("pk", flat=True)
    )
    set_session_toolsets(session.pk, usable, user=by)


def _default_title(source: Plan) -> str:
    base = (source.session.title if source.session else "") or source.name
    return gettext("%(title)s (continued)") % {"title": base[: NAME_MAX - 20]}


def session_fork(
    *,
    plan_id: int,
    by: User,
    version: int | None = None,
    subtask_id: int | None = None,
    title: str | None = None,
) -> tuple[ChatSession, Plan]:
    """Continue a plan in a new session of `by`'s, from `version` of its history or from the
    version that finished `subtask_id`: the new session's current plan is the plan as it stood
    there, subtasks' states and outcomes kept (a finished plan is open again: its state follows
    its subtasks). Only someone who may read the plan's history may fork it. Returns the new
    session and plan."""
    version, subtask_id = _clean_point(version, subtask_id)
    source = (
        selectors.plans_visible_to(by)
        .select_related("session", "session__profile")
        .filter(pk=plan_id)
        .first()
    )
    if source is None or not by.is_active:
        raise PlanError(f"Plan {plan_id} does not exist.", code="not_found")
    at = _fork_version(source, version, subtask_id)
    snapshot = _snapshot_at(source, at)
    clean_title = (
        _clean_text(title, field="title", limit=NAME_MAX) if title else _default_title(source)
    )
    started = any(s["state"] != State.TODO for s in snapshot["subtasks"])

    with transaction.atomic():
        session = _new_session(source, by=by, title=clean_title)
        plan = Plan(
            owner=by,
            session=session,
            name=snapshot["name"],
            description=snapshot["description"],
            expected_outcome=snapshot["expected_outcome"],
            state=State.IN_PROGRESS if started else State.TODO,
            version=1,  # the fork event's version: the row needs no update after it
        )
        plan.save(force_insert=True)
        created = SubTask.objects.bulk_create(
            [
                SubTask(
                    plan=plan,
                    position=position,
                    name=item["name"],
                    description=item["description"],
                    expected_outcome=item["expected_outcome"],
                    outcome=item["outcome"],
                    state=item["state"],
                    agent=item.get("agent") or "",
                    finished_at=_when(item["finished_at"]),
                )
                for position, item in enumerate(snapshot["subtasks"])
            ]
        )
        id_map = {
            item["id"]: new.pk for item, new in zip(snapshot["subtasks"], created, strict=True)
        }
        _copy_blockers(snapshot, created, id_map)
        origin = {
            "plan_id": source.pk,
            "session_id": source.session_id,
            "version": at,
            "name": source.name,
        }
        _record(
            plan,
            actor=Actor.person(by),
            action="plan_forked",
            subtasks=created,
            after={"name": plan.name, "subtasks": [s.name for s in created], "source": origin},
            upsert=created,
            order_changed=True,
            inserted=True,
        )
        _set_current_plan(session, plan)
        _copy_toolsets(session, source, by=by)
        PlanFork.objects.create(
            session=session,
            plan=plan,
            source_plan=source,
            source_session_id=source.session_id,
            source_version=at,
            source_name=source.name,
            created_by=by,
            account=_account(source, at, id_map),
        )
    return session, plan
