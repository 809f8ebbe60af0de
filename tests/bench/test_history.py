"""`python -m bench.history`: a benchmark's recorded runs from bench/results as a table."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench import history

FIXTURE = Path(__file__).with_name("history_fixture.json")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    shutil.copy(FIXTURE, tmp_path / "demo.json")
    return tmp_path


def test_prints_every_row_oldest_first_with_short_columns_only(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert history.main(["demo"], results=results) == 0
    assert capsys.readouterr().out.splitlines() == [
        "rows:",
        "",
        "| label         | wall | statuses.succeeded | git     | per_call       | timed_out |",
        "| ------------- | ---- | ------------------ | ------- | -------------- | --------- |",
        "| prefork floor | 54.3 | 24                 | 191c05a |                |           |",
        "| host N200     | 11.2 | 200                | 6a08e67 | 0.005 / 0.0051 | no        |",
        "| host N200 #2  | 10.9 | 200                | 6a08e67 | 0.0049         | yes       |",
        "",
        "the floor:",
        "",
        "| label       | mean_us | git |",
        "| ----------- | ------- | --- |",
        "| floor alone | 852     |     |",
    ]


def test_columns_match_and_last_pick_what_is_shown(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--match", "n200", "--last", "1", "--columns", "git,command"]
    assert history.main(argv, results=results) == 0
    command = ".venv/bin/python bench/run_concurrency.py --runs 200 --label 'host N200 #2'"
    assert capsys.readouterr().out.splitlines() == [
        f"| git     | {'command'.ljust(len(command))} |",
        f"| ------- | {'-' * len(command)} |",
        f"| 6a08e67 | {command} |",
    ]


def test_an_unknown_benchmark_names_the_recorded_ones(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert history.main(["nope"], results=results) == 2
    assert "no results for 'nope'; recorded: demo" in capsys.readouterr().err


def test_a_match_without_rows_says_so(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert history.main(["demo", "--match", "absent"], results=results) == 0
    assert capsys.readouterr().out.strip() == "no rows whose label contains 'absent'"


def test_a_file_that_is_not_a_list_of_rows_is_refused(results: Path) -> None:
    (results / "broken.json").write_text('{"label": "x"}')
    with pytest.raises(ValueError, match="not a list of rows"):
        history.main(["broken"], results=results)


@pytest.mark.parametrize("path", sorted(history.RESULTS.glob("*.json")), ids=lambda p: p.stem)
def test_every_recorded_benchmark_prints_all_its_rows(path: Path) -> None:
    rows = history.load_rows(path)
    lines = history.render(rows)
    body = [line for line in lines if line.startswith("| ") and not line.startswith("| -")]
    tables = sum(1 for line in lines if line.startswith("| -"))
    assert len(body) - tables == len(rows)
