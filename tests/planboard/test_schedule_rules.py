"""When schedules come due: cron, every N hours, every N days, across daylight-saving changes
in Europe/Berlin (clocks go forward on 2025-03-30 at 02:00, back on 2025-10-26 at 03:00)."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, time, timedelta

import pytest

from planboard import schedules as rules
from planboard.exceptions import PlanError

BERLIN = "Europe/Berlin"


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def local(instants: list[datetime], zone: str = BERLIN) -> list[str]:
    tz = rules.zone(zone)
    return [i.astimezone(tz).strftime("%m-%d %H:%M %Z") for i in instants]


def test_daily_cron_keeps_its_wall_clock_time_across_both_changes() -> None:
    rule = rules.Rule(kind="cron", timezone=BERLIN, cron="0 9 * * *")
    spring = rules.upcoming(rule, utc(2025, 3, 29, 12), 3)
    assert local(spring) == ["03-30 09:00 CEST", "03-31 09:00 CEST", "04-01 09:00 CEST"]
    assert spring[0] == utc(2025, 3, 30, 7)
    autumn = rules.upcoming(rule, utc(2025, 10, 25, 12), 2)
    assert local(autumn) == ["10-26 09:00 CET", "10-27 09:00 CET"]
    assert autumn[0] == utc(2025, 10, 26, 8)


def test_a_skipped_time_fires_once_after_the_jump() -> None:
    rule = rules.Rule(kind="cron", timezone=BERLIN, cron="30 2 * * *")
    due = rules.upcoming(rule, utc(2025, 3, 29, 12), 2)
    # 02:30 does not exist on 30 March: it fires when the clocks say 03:30.
    assert local(due) == ["03-30 03:30 CEST", "03-31 02:30 CEST"]


def test_hourly_cron_neither_doubles_in_spring_nor_repeats_in_autumn() -> None:
    rule = rules.Rule(kind="cron", timezone=BERLIN, cron="30 * * * *")
    spring = rules.upcoming(rule, utc(2025, 3, 30, 0), 3)
    assert local(spring) == ["03-30 01:30 CET", "03-30 03:30 CEST", "03-30 04:30 CEST"]
    autumn = rules.upcoming(rule, utc(2025, 10, 26, 0), 3)
    # The repeated 02:30 fires the first time only.
    assert local(autumn) == ["10-26 02:30 CEST", "10-26 03:30 CET", "10-26 04:30 CET"]
    assert len(set(spring)) == 3 and len(set(autumn)) == 3


def test_every_n_days_at_a_time_counts_local_days_from_its_start() -> None:
    rule = rules.Rule(
        kind="days", timezone=BERLIN, every=2, at_time=time(8, 15), starts_on=date(2025, 3, 27)
    )
    due = rules.upcoming(rule, utc(2025, 3, 27, 0), 3)
    assert local(due) == ["03-27 08:15 CET", "03-29 08:15 CET", "03-31 08:15 CEST"]


def test_every_n_hours_keeps_real_hours_across_a_change() -> None:
    rule = rules.Rule(
        kind="hours", timezone=BERLIN, every=6, at_time=time(0, 0), starts_on=date(2025, 3, 30)
    )
    due = rules.upcoming(rule, utc(2025, 3, 29, 0), 3)
    assert [b - a for a, b in itertools.pairwise(due)] == [timedelta(hours=6)] * 2
    assert local(due) == ["03-30 00:00 CET", "03-30 07:00 CEST", "03-30 13:00 CEST"]


def test_day_of_week_and_month_match_either_as_in_cron() -> None:
    rule = rules.Rule(kind="cron", timezone="UTC", cron="0 12 13 * fri")
    due = rules.upcoming(rule, utc(2025, 6, 1), 4)
    days = [d.strftime("%a %d") for d in due]
    assert "Fri 06" in days and "Fri 13" in days and "Fri 20" in days
    assert all(d.startswith("Fri") or d.endswith("13") for d in days)


def test_due_between_keeps_the_newest_of_a_long_gap() -> None:
    rule = rules.Rule(kind="cron", timezone="UTC", cron="0 * * * *")
    due = rules.due_between(rule, utc(2025, 1, 1, 0), utc(2025, 1, 3, 0, 30), limit=5)
    assert due == [utc(2025, 1, 2, h) for h in (20, 21, 22, 23)] + [utc(2025, 1, 3, 0)]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"kind": "cron", "cron": "0 9 * *"}, "five fields"),
        ({"kind": "cron", "cron": "61 9 * * *"}, "Cron expression"),
        ({"kind": "cron", "cron": "0 9 31 2 *"}, "never occurs"),
        ({"kind": "cron", "cron": "* * * * *"}, "at least 5 minutes"),
        ({"kind": "hours", "every": 0}, "from 1 to 168"),
        ({"kind": "days", "every": True}, "from 1 to 366"),
        ({"kind": "weekly"}, "'kind' must be one of"),
        ({"kind": "cron", "cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "Unknown time zone"),
        ({"kind": "cron", "cron": "0 9 * * *", "timezone": "../../etc/passwd"}, "Unknown time"),
    ],
)
def test_bad_rules_are_refused_with_a_clear_message(kwargs: dict, fragment: str) -> None:
    args = {"timezone": BERLIN, **kwargs}
    with pytest.raises(PlanError) as caught:
        rules.clean_rule(
            **args,
            today=date(2025, 1, 1),
            min_gap=timedelta(minutes=5),
            now=utc(2025, 1, 1),
        )
    assert fragment in caught.value.message


def test_a_clean_rule_fills_its_defaults() -> None:
    rule = rules.clean_rule(
        kind="days",
        timezone=" Asia/Shanghai ",
        every=1,
        today=date(2025, 1, 1),
        min_gap=timedelta(minutes=5),
        now=utc(2025, 1, 1),
    )
    assert (rule.timezone, rule.at_time, rule.starts_on) == (
        "Asia/Shanghai",
        time(9, 0),
        date(2025, 1, 1),
    )
