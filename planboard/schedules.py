"""When a schedule is due: pure rules, no database.

A rule is a cron expression, "every N hours" or "every N days at a time", read in the
person's IANA time zone (`zoneinfo`). Cron and daily rules are wall-clock rules: 09:00 stays
09:00 on both sides of a daylight-saving change. A wall-clock time that does not exist (the
hour skipped in spring) fires when the clocks have moved on, at the same number of minutes
into the shifted hour (02:30 becomes 03:30), once; a time that happens twice (the hour
repeated in autumn) fires the first time only. "Every N hours" counts real hours from its
start, so it keeps its spacing across a change and its wall-clock times move by an hour.

Cron expressions have the usual five fields (minute, hour, day of month, month, day of week;
names such as `mon` or `jan` allowed, Sunday is 0) and are parsed by Celery's own cron
parser, which Planboard already depends on. When both the day of month and the day of
week are restricted, either matching is enough, as in cron.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from celery.schedules import ParseException, crontab

from planboard.exceptions import PlanError

KINDS = ("cron", "hours", "days")
HOURS_MAX = 24 * 7
DAYS_MAX = 366
# How far ahead a cron rule is searched for its next time (Feb 29 comes within eight years).
SEARCH_DAYS = 366 * 8 + 2
PREVIEW_COUNT = 5


@dataclass(frozen=True)
class Rule:
    """A schedule's timing, as stored on `Schedule`."""

    kind: str
    timezone: str
    cron: str = ""
    every: int | None = None
    at_time: time | None = None
    starts_on: date | None = None


@dataclass(frozen=True)
class CronFields:
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days_of_month: frozenset[int]
    months: frozenset[int]
    # 0 = Sunday, as in cron.
    days_of_week: frozenset[int]
    any_day_of_month: bool
    any_day_of_week: bool


def zone(name: str) -> ZoneInfo:
    """The time zone named `name` (IANA, e.g. `Europe/Berlin`), or a clear error."""
    clean = (name or "").strip()
    if not clean or len(clean) > 64 or clean not in _zone_names():
        raise PlanError(
            f"Unknown time zone {clean!r}: use an IANA name such as Europe/Berlin or UTC.",
            code="invalid_timezone",
        )
    try:
        return ZoneInfo(clean)
    except (ZoneInfoNotFoundError, ValueError) as exc:  # listed but unreadable data
        raise PlanError(f"Unknown time zone {clean!r}.", code="invalid_timezone") from exc


_ZONES: frozenset[str] | None = None


def _zone_names() -> frozenset[str]:
    global _ZONES
    if _ZONES is None:
        _ZONES = frozenset(available_timezones())
    return _ZONES


def parse_cron(expression: str) -> CronFields:
    """The five fields of `expression`, or `PlanError` saying what is wrong."""
    fields = (expression or "").split()
    if len(fields) != 5 or len(expression) > 100:
        raise PlanError(
            "A cron expression has five fields: minute hour day-of-month month day-of-week "
            "(for example `0 9 * * 1-5`).",
            code="invalid_cron",
        )
    minute, hour, day_of_month, month, day_of_week = fields
    try:
        parsed = crontab(
            minute=minute,
            hour=hour,
            day_of_month=day_of_month,
            month_of_year=month,
            day_of_week=day_of_week,
        )
    except (ParseException, ValueError, IndexError, KeyError) as exc:
        raise PlanError(f"Cron expression {expression!r}: {exc}", code="invalid_cron") from exc
    return CronFields(
        minutes=tuple(sorted(parsed.minute)),
        hours=tuple(sorted(parsed.hour)),
        days_of_month=frozenset(parsed.day_of_month),
        months=frozenset(parsed.month_of_year),
        days_of_week=frozenset(parsed.day_of_week),
        any_day_of_month=day_of_month == "*",
        any_day_of_week=day_of_week == "*",
    )


def _day_matches(fields: CronFields, day: date) -> bool:
    if day.month not in fields.months:
        return False
    by_month_day = day.day in fields.days_of_month
    by_week_day = (day.isoweekday() % 7) in fields.days_of_week
    if fields.any_day_of_month or fields.any_day_of_week:
        return by_month_day and by_week_day
    return by_month_day or by_week_day


def wall_clock(day: date, at: time, tz: ZoneInfo) -> datetime:
    """The instant (UTC) of `day` at `at` in `tz`: a skipped time moves on by the gap, a
    repeated one is its first instance (fold 0)."""
    local = datetime.combine(day, at.replace(tzinfo=None, fold=0), tzinfo=tz)
    return local.astimezone(UTC)


def _cron_after(fields: CronFields, tz: ZoneInfo, after: datetime) -> Iterator[datetime]:
    start = after.astimezone(tz).date() - timedelta(days=1)
    last: datetime | None = None
    for offset in range(SEARCH_DAYS):
        day = start + timedelta(days=offset)
        if not _day_matches(fields, day):
            continue
        times = sorted(
            {wall_clock(day, time(h, m), tz) for h in fields.hours for m in fields.minutes}
        )
        for instant in times:
            # Two wall-clock times can land on one instant (one skipped in spring, one real).
            if instant > after and (last is None or instant > last):
                last = instant
                yield instant


def _days_after(rule: Rule, tz: ZoneInfo, after: datetime) -> Iterator[datetime]:
    assert rule.every and rule.at_time and rule.starts_on
    local_day = after.astimezone(tz).date()
    elapsed = (local_day - rule.starts_on).days - 1
    step = max(0, math.floor(elapsed / rule.every))
    while True:
        day = rule.starts_on + timedelta(days=step * rule.every)
        instant = wall_clock(day, rule.at_time, tz)
        if instant > after:
            yield instant
        step += 1


def _hours_after(rule: Rule, tz: ZoneInfo, after: datetime) -> Iterator[datetime]:
    assert rule.every and rule.at_time and rule.starts_on
    anchor = wall_clock(rule.starts_on, rule.at_time, tz)
    period = timedelta(hours=rule.every)
    step = 0 if after < anchor else math.floor((after - anchor) / period) + 1
    while True:
        instant = anchor + step * period
        if instant > after:
            yield instant
        step += 1


def occurrences_after(rule: Rule, after: datetime) -> Iterator[datetime]:
    """Every due time strictly after `after`, in order, as UTC instants (endless, except a
    cron rule that matches no day in the years searched)."""
    tz = zone(rule.timezone)
    if rule.kind == "cron":
        return _cron_after(parse_cron(rule.cron), tz, after)
    if rule.kind == "days":
        return _days_after(rule, tz, after)
    return _hours_after(rule, tz, after)


def next_after(rule: Rule, after: datetime) -> datetime | None:
    return next(occurrences_after(rule, after), None)


def upcoming(rule: Rule, after: datetime, count: int = PREVIEW_COUNT) -> list[datetime]:
    found: list[datetime] = []
    for instant in occurrences_after(rule, after):
        found.append(instant)
        if len(found) >= count:
            break
    return found


def due_between(rule: Rule, first: datetime, now: datetime, *, limit: int) -> list[datetime]:
    """The due times from `first` (itself due) up to `now`, newest last, at most `limit` of
    the newest (a scheduler stopped for long has missed more than anyone needs listed)."""
    due = [first]
    for instant in occurrences_after(rule, first):
        if instant > now:
            break
        due.append(instant)
        if len(due) > limit * 4:
            # Jump ahead: only the newest `limit` are kept anyway.
            due = due[-limit:]
    return due[-limit:]


def clean_rule(
    *,
    kind: str,
    timezone: str,
    cron: str = "",
    every: int | None = None,
    at_time: time | None = None,
    starts_on: date | None = None,
    today: date,
    min_gap: timedelta,
    now: datetime,
) -> Rule:
    """Check what a person asked for and fill the defaults; `PlanError` when it is wrong or
    would fire more often than `min_gap` allows."""
    if kind not in KINDS:
        raise PlanError(f"'kind' must be one of {', '.join(KINDS)}.", code="invalid_schedule")
    zone(timezone)
    if kind == "cron":
        parse_cron(cron)
        rule = Rule(kind=kind, timezone=timezone.strip(), cron=" ".join(cron.split()))
    else:
        limit = HOURS_MAX if kind == "hours" else DAYS_MAX
        if isinstance(every, bool) or not isinstance(every, int) or not 1 <= every <= limit:
            raise PlanError(
                f"'every' must be a whole number of {kind} from 1 to {limit}.",
                code="invalid_schedule",
            )
        rule = Rule(
            kind=kind,
            timezone=timezone.strip(),
            every=every,
            at_time=(at_time or time(9, 0)).replace(second=0, microsecond=0, tzinfo=None),
            starts_on=starts_on or today,
        )
    ahead = upcoming(rule, now, count=12)
    if not ahead:
        raise PlanError("This rule never comes due.", code="invalid_schedule")
    gaps = [later - earlier for earlier, later in itertools.pairwise(ahead)]
    if gaps and min(gaps) < min_gap:
        minutes = int(min_gap.total_seconds() // 60)
        raise PlanError(
            f"Occurrences must be at least {minutes} minutes apart.", code="invalid_schedule"
        )
    return rule
