"""bench/one_box.py's pure parts: the order the codes are measured in, a measurement's figures
from its posts, and the current code's figures as fractions of the reference's."""

from __future__ import annotations

from typing import Any

from bench import one_box


def test_each_pair_is_measured_in_the_order_reversed_from_the_one_before() -> None:
    assert one_box.alternation(1) == ["current", "reference"]
    assert one_box.alternation(2) == ["current", "reference", "reference", "current"]
    assert one_box.alternation(3)[4:] == ["current", "reference"]


def test_a_measurement_is_summed_up_from_its_posts_and_the_models_first_sight() -> None:
    posts = [
        {"tag": f"b{n}", "sent": 100.0, "answered": 100.0 + n, "status": 202} for n in range(4)
    ]
    posts.append({"tag": "b4", "sent": 100.0, "answered": 130.0, "status": "ConnectionError"})
    seen = {f"b{n}": 101.0 + n for n in range(4)}  # the refused post's run never asked
    row = {"runs": 5, "delay": 2.0, "answers": 4, "statuses": {"succeeded": 4}}
    summary = one_box.summarize(row, posts, seen, 99.0, 111.0)
    assert summary["wall"] == 12.0
    assert summary["ratio"] == 1.5
    assert summary["completed"] == 4
    assert summary["posts_refused"] == 1
    assert summary["post_failures"] == {"ConnectionError": 1}
    assert summary["first_requests_seen"] == 4
    assert (summary["first_request_p50"], summary["first_request_p95"]) == (2.0, 4.0)
    assert summary["post_answer_p95"] == 30.0
    assert summary["post_span"] == 31.0


def row(code: str, wall: float, p95: float) -> dict[str, Any]:
    return {
        "code": code,
        "commit": "abc1234" if code == "current" else "0f0497f",
        "runs": 200,
        "wall": wall,
        "ratio": round(wall / 8, 2),
        "completed": 200,
        "first_request_p50": p95 / 2,
        "first_request_p95": p95,
        "post_answer_p95": p95,
        "daphne_cpu_s": 10.0,
        "worker_cpu_s": 40.0,
    }


def test_ratios_divide_the_current_median_by_the_references() -> None:
    rows = [row("current", 10, 2), row("reference", 20, 8), row("reference", 30, 12)]
    rows.append(row("current", 12, 4))
    ratios = one_box.ratios(rows)
    assert ratios["wall"] == 0.44  # 11 / 25
    assert ratios["first_request_p95"] == 0.3  # 3 / 10
    assert ratios["daphne_cpu_s"] == 1.0


def test_the_table_shows_each_measurement_and_the_ratio_row() -> None:
    two = [row("current", 10, 2), row("current", 12, 4)]
    assert one_box.table_rows(two)[0][3] == "1.0 / 2, 2.0 / 4"
    rows = [row("current", 10, 2), row("reference", 20, 8)]
    current, reference, share = one_box.table_rows(rows)
    assert current[:3] == ["current (abc1234)", "10", "1.25x"]
    assert reference[3] == "4.0 / 8"
    assert share[0] == "current / reference (medians)"
    assert share[1:4] == ["0.50", "", "0.25 / 0.25"]
    assert len(share) == len(one_box.HEADERS)
