"""bench/_common.py's recording: a run's rows appended to bench/results/<name>.json with the
run's facts, and docs/PERFORMANCE.md's section of that benchmark rewritten from this run only."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench import _common as common

FIXTURE = Path(__file__).with_name("history_fixture.json")
FACTS: dict[str, Any] = {
    "machine": "AMD EPYC, 2 cores, 23.5 GiB RAM, Linux 6.1, Python 3.11.7",
    "services": "postgresql 15.20 (Debian 15.20-0+deb12u1), redis 7.0.15",
    "date": "2026-11-28 16:40 UTC",
    "load_average": "1.00, 0.50, 0.25",
    "command": ".venv/bin/python bench/demo.py --runs 3",
    "git": "abc1234",
}
DOC = """# Performance

Written by hand: kept as it is.

<!-- bench:hint_cost:start -->
## 1. Hint
old hint figures
<!-- bench:hint_cost:end -->

<!-- bench:ws_latency:start -->
## 3. Latency
old latency figures
<!-- bench:ws_latency:end -->
"""


@pytest.fixture
def results(tmp_path: Path) -> Path:
    shutil.copy(FIXTURE, tmp_path / "demo.json")
    return tmp_path


def test_a_run_is_appended_with_its_facts_and_earlier_rows_stay_as_they_were(
    results: Path,
) -> None:
    before = json.loads((results / "demo.json").read_text())
    rows = [{"label": "current", "p95_ms": 61.0}, {"label": "reference", "p95_ms": 57.0}]
    common.record_run("demo", rows, FACTS, results_dir=results)
    stored = json.loads((results / "demo.json").read_text())
    assert stored[: len(before)] == before
    assert stored[len(before) :] == [{**row, **FACTS} for row in rows]
    # Twice the same label is two runs, not a replacement.
    common.record_run("demo", rows[:1], FACTS, results_dir=results)
    assert len(json.loads((results / "demo.json").read_text())) == len(before) + 3


def test_a_new_benchmark_starts_its_file(results: Path) -> None:
    common.record_run("fresh", [{"label": "first", "text": "日本語"}], FACTS, results_dir=results)
    text = (results / "fresh.json").read_text()
    assert "日本語" in text  # readable in a diff, as the stored files are
    assert json.loads(text) == [{"label": "first", "text": "日本語", **FACTS}]


def test_a_file_that_is_not_a_list_is_left_alone(results: Path) -> None:
    (results / "broken.json").write_text('{"label": "x"}')
    with pytest.raises(SystemExit, match="not a list of rows"):
        common.record_run("broken", [{"label": "y"}], FACTS, results_dir=results)
    assert (results / "broken.json").read_text() == '{"label": "x"}'


def test_the_facts_open_a_section_in_one_wrapped_paragraph() -> None:
    lines = common.facts_lines(FACTS)
    assert all(len(line) <= 96 for line in lines)
    assert " ".join(lines) == (
        "Machine: AMD EPYC, 2 cores, 23.5 GiB RAM, Linux 6.1, Python 3.11.7; PostgreSQL 15.20, "
        "Redis 7.0.15. 2026-11-28, load 1.00, 0.50, 0.25, commit abc1234. Command: "
        "`.venv/bin/python bench/demo.py --runs 3`."
    )
    without = {k: v for k, v in FACTS.items() if k not in ("services", "git")}
    assert " ".join(common.facts_lines(without)).startswith(
        "Machine: AMD EPYC, 2 cores, 23.5 GiB RAM, Linux 6.1, Python 3.11.7. 2026-11-28, load"
    )


def test_a_section_is_replaced_and_nothing_else_changes(tmp_path: Path) -> None:
    doc = tmp_path / "PERFORMANCE.md"
    doc.write_text(DOC)
    common.write_section("ws_latency", "3. Latency", ["new figures", "| a | b |"], doc=doc)
    expected = DOC.replace("old latency figures", "new figures\n| a | b |")
    assert doc.read_text() == expected
    common.write_section("ws_latency", "3. Latency", ["newer figures"], doc=doc)
    assert doc.read_text() == DOC.replace("old latency figures", "newer figures")


def test_a_missing_section_goes_in_benchmark_order(tmp_path: Path) -> None:
    doc = tmp_path / "PERFORMANCE.md"
    doc.write_text(DOC)
    common.write_section("tool_overhead", "2. Tools", ["tool figures"], doc=doc)
    text = doc.read_text()
    assert text.index("bench:hint_cost:end") < text.index("bench:tool_overhead:start")
    assert text.index("bench:tool_overhead:end") < text.index("bench:ws_latency:start")
    assert text.startswith("# Performance\n\nWritten by hand: kept as it is.\n")


def test_a_subsection_follows_the_section_it_belongs_to(tmp_path: Path) -> None:
    doc = tmp_path / "PERFORMANCE.md"
    doc.write_text(DOC)
    common.write_section("run_concurrency", "5. Runs", ["worker figures"], doc=doc)
    common.write_section("one_box", "One box", ["one-box figures"], doc=doc, level=3)
    text = doc.read_text()
    assert "<!-- bench:one_box:start -->\n### One box\none-box figures\n" in text
    assert text.index("bench:run_concurrency:end") < text.index("bench:one_box:start")
    common.write_section("one_box", "", ["untitled figures"], doc=doc)
    assert "<!-- bench:one_box:start -->\nuntitled figures\n<!--" in doc.read_text()


def test_long_prose_is_wrapped_and_tables_are_not(tmp_path: Path) -> None:
    doc = tmp_path / "PERFORMANCE.md"
    prose = "word " * 60
    row = "| " + " | ".join(["cell"] * 40) + " |"
    common.write_section("hint_cost", "1. Hint", [prose.strip(), "", row], doc=doc)
    body = doc.read_text().split("## 1. Hint\n", 1)[1]
    lines = body.splitlines()
    assert row in lines
    prose_lines = lines[: lines.index("")]
    assert len(prose_lines) > 1 and all(len(line) <= 96 for line in prose_lines)
    assert " ".join(prose_lines) == prose.strip()


@pytest.mark.parametrize(
    ("model", "short"),
    [
        ("AMD EPYC 7B13 64-Core Processor", "AMD EPYC"),
        ("Intel(R) Xeon(R) Processor", "Intel Xeon"),
        ("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "Intel Xeon Platinum"),
        ("1234", "1234"),
    ],
)
def test_the_cpu_is_named_by_maker_and_family(model: str, short: str) -> None:
    assert common.short_cpu(model) == short


def test_the_commit_is_marked_dirty_only_for_code_changes(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "PERFORMANCE.md").write_text("# Performance\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "start")
    commit = common.git_commit(tmp_path)
    assert commit is not None and not commit.endswith("-dirty")
    (tmp_path / "docs" / "PERFORMANCE.md").write_text("# Performance\n\nnew figures\n")
    assert common.git_commit(tmp_path) == commit
    (tmp_path / "code.py").write_text("x = 2\n")
    assert common.git_commit(tmp_path) == f"{commit}-dirty"
    assert common.git_commit(tmp_path / "docs" / "nowhere") is None


def test_a_reference_checkout_is_a_clean_clone_at_the_revision_with_this_venv() -> None:
    root = common.reference_checkout("HEAD~1")
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert head == common.short_revision("HEAD~1")
        assert (root / ".venv").resolve() == common.VENV_DIR.resolve()
        assert (root / "planboard" / "asgi.py").exists()
        assert common.git_commit(root) == head  # nothing changed in it
    finally:
        shutil.rmtree(root.parent)


def test_an_unknown_reference_is_refused_by_name() -> None:
    with pytest.raises(SystemExit, match="no-such-revision"):
        common.short_revision("no-such-revision")
    with pytest.raises(SystemExit, match="no-such-revision"):
        common.reference_checkout("no-such-revision")
