"""bench/posting_path.py's pure parts: the instructions a callgrind dump counted, and the
current code's figures as fractions of the reference's."""

from __future__ import annotations

from bench import posting_path

DUMP = """# callgrind format
version: 1
creator: callgrind-3.19.0
cmd: python -c ...
events: Ir
summary: 28650894
totals: 286508940
fl=(1) ???
"""


def test_the_total_of_a_dump_is_its_totals_line() -> None:
    assert posting_path.callgrind_total(DUMP) == 286508940
    assert posting_path.callgrind_total("events: Ir\nsummary: 5\n") is None


def test_ratios_divide_the_current_row_by_the_references() -> None:
    rows = [
        {
            "code": "reference",
            "instructions_per_post": 40_000_000,
            "python_calls_per_post": 20_000,
            "statements_per_post": 10.0,
            "cpu_ms_per_post": 16.0,
        },
        {
            "code": "current",
            "instructions_per_post": 18_000_000,
            "python_calls_per_post": 11_000,
            "statements_per_post": 10.0,
            "cpu_ms_per_post": 8.0,
        },
    ]
    assert posting_path.ratios(rows) == {
        "instructions_per_post": 0.45,
        "python_calls_per_post": 0.55,
        "statements_per_post": 1.0,
        "cpu_ms_per_post": 0.5,
    }
    rows[1]["instructions_per_post"] = None  # measured without valgrind
    assert posting_path.ratios(rows)["instructions_per_post"] is None
