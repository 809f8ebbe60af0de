"""The session's files as a real folder tree, for an MCP server whose toolset declares the
session's workspace as its root (`Toolset.roots`, docs/TOOLS.md "Roots").

A live session with such a server owns one temporary folder (`Tree`, removed when the
session ends). Before each call the folder is made to hold exactly the session's files
under their own names (`materialize`); after it, what the server changed there is brought
back through the workspace services (`collect`): the same path rules, size and count
limits, and approval policy as the built-in `workspace` tools. New and changed files follow
`write_file`'s policy; deleted files, and files emptied of their content, follow
`delete_file`'s; a call a person approved brings back whatever it did. What is not brought
back is said in the call's result and undone in the folder before the next call.

Nothing outside the folder is ever read or written: every path is opened one component at a
time relative to the folder with `O_NOFOLLOW` (a link the server planted, or swapped in
meanwhile, is refused, never followed), and only regular files are read. No transaction is
held while the server works: each step is its own short unit of database work.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.files.storage import default_storage

from planboard import selectors, services, workspace
from planboard.exceptions import PlanError

# How many entries of the folder `collect` looks at, at most, per allowed file: a server
# that makes a million files does not make the worker walk them all.
ENTRIES_PER_FILE = 10
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
# O_NONBLOCK: a FIFO the server left is not waited on (it is then refused as no file).
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
_SHOWN = re.compile(r"[^A-Za-z0-9._/-]")


@dataclass(frozen=True)
class Entry:
    """A file as the folder held it after the last sync: which stored bytes, and how the
    file looked on disk then (a change of size or time means the server wrote it)."""

    storage_name: str
    size: int
    mtime_ns: int
    digest: str


@dataclass
class Tree:
    """One live session's folder, and what it held after the last sync, by path."""

    folder: Path
    known: dict[str, Entry] = field(default_factory=dict)

    @classmethod
    def make(cls) -> Tree:
        return cls(Path(tempfile.mkdtemp(prefix="planboard-roots-")).resolve())

    @property
    def uri(self) -> str:
        return self.folder.as_uri()

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)  # never follows links


@dataclass
class Report:
    """What `collect` brought back, and what it did not (and why)."""

    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def note(self) -> str:
        """Planboard's words for the call's result (empty: nothing changed)."""
        parts = []
        if self.written:
            parts.append("wrote " + ", ".join(self.written))
        if self.deleted:
            parts.append("deleted " + ", ".join(self.deleted))
        if self.refused:
            parts.append("not brought back: " + "; ".join(self.refused))
        if not parts:
            return ""
        return "[Planboard: the session's files after this call: " + "; ".join(parts) + ".]"


def shown(path: str) -> str:
    """A name the server chose, safe to quote (our own characters only, bounded)."""
    return _SHOWN.sub("?", path)[:120]


# --- opening beneath the folder ---------------------------------------------------------------


def _open_beneath(root: Path, path: str, flags: int, *, make_dirs: bool = False) -> int:
    """`path` (already a clean relative path) opened under `root`, one component at a time:
    a link anywhere on the way fails the open (ELOOP/ENOTDIR) instead of leading out."""
    parts = path.split("/")
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            if make_dirs:
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(parts[-1], flags, 0o600, dir_fd=fd)
    finally:
        os.close(fd)


@dataclass
class _Found:
    files: dict[str, os.stat_result] = field(default_factory=dict)  # regular files: lstat
    refused: list[str] = field(default_factory=list)  # links, special files, too deep
    others: list[tuple[str, bool]] = field(default_factory=list)  # the rest: is it a folder
    complete: bool = True  # False: stopped at the budget, so absent files are not gone


def _scan(root: Path, budget: int) -> _Found:
    """What the folder holds, looking at `budget` entries at most."""
    found = _Found()
    files, refused, others = found.files, found.refused, found.others
    seen = 0

    def walk(fd: int, prefix: str, depth: int) -> None:
        nonlocal seen
        with os.scandir(fd) as entries:
            for entry in entries:
                seen += 1
                if seen > budget:
                    raise _Enough()
                path = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    others.append((path, True))
                    if depth + 1 >= workspace.MAX_DEPTH:
                        deepest = workspace.MAX_DEPTH - 1
                        refused.append(f"{shown(path)}/ (folders nest at most {deepest} deep)")
                        continue
                    try:
                        inner = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
                    except OSError:
                        refused.append(f"{shown(path)}/ (could not be opened)")
                        continue
                    try:
                        walk(inner, path + "/", depth + 1)
                    finally:
                        os.close(inner)
                elif entry.is_file(follow_symlinks=False):
                    files[path] = entry.stat(follow_symlinks=False)
                else:
                    others.append((path, False))
                    refused.append(f"{shown(path)} (a link or special file: never followed)")

    top = os.open(root, _DIR_FLAGS)
    try:
        walk(top, "", 0)
    except _Enough:
        refused.append(f"the folder holds more than {budget} entries; the rest were not looked at")
        found.complete = False
    finally:
        os.close(top)
    return found


class _Enough(Exception):
    pass


def _read(root: Path, path: str, limit: int) -> bytes | None:
    """The file's bytes, at most `limit` + 1 (None: not a regular file any more)."""
    fd = _open_beneath(root, path, _READ_FLAGS)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(limit + 1)


# --- before a call ----------------------------------------------------------------------------


def materialize(tree: Tree, *, session_id: int) -> None:
    """Make the folder hold exactly the session's files, under their own names. A file the
    folder already holds as last synced is left alone; anything else is removed or written
    afresh from storage."""
    rows = {row.path: row for row in selectors.workspace_file_rows(session_id=session_id)}
    scanned = _scan(tree.folder, budget=(workspace.max_files() + 1) * ENTRIES_PER_FILE)
    if not scanned.complete:  # a folder that large is no use: start it afresh
        for child in list(tree.folder.iterdir()):
            _unlink(tree.folder, child.name, folder=child.is_dir() and not child.is_symlink())
        scanned = _Found()
    kept: dict[str, Entry] = {}
    for path, found in scanned.files.items():
        entry, row = tree.known.get(path), rows.get(path)
        if (
            entry is not None
            and row is not None
            and row.storage_name == entry.storage_name
            and (found.st_size, found.st_mtime_ns) == (entry.size, entry.mtime_ns)
        ):
            kept[path] = entry
        else:
            _unlink(tree.folder, path)
    wanted_dirs = {p.rsplit("/", 1)[0] for p in rows if "/" in p}
    wanted_dirs |= {d.rsplit("/", i)[0] for d in wanted_dirs for i in range(d.count("/") + 1)}
    for path, is_dir in sorted(scanned.others, key=lambda o: -o[0].count("/")):  # deepest first
        if not is_dir or path not in wanted_dirs:
            _unlink(tree.folder, path, folder=is_dir)
    for path, row in rows.items():
        if path in kept:
            continue
        kept[path] = _write(tree.folder, path, row.storage_name)
    tree.known = kept


def _unlink(root: Path, path: str, *, folder: bool = False) -> None:
    head, _, name = path.rpartition("/")
    try:
        fd = _open_beneath(root, f"{head}/." if head else ".", _DIR_FLAGS)
    except OSError:
        return
    try:
        if folder:
            shutil.rmtree(name, dir_fd=fd)  # fd-based: never follows a link out
        else:
            os.unlink(name, dir_fd=fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write(root: Path, path: str, storage_name: str) -> Entry:
    digest = hashlib.sha256()
    fd = _open_beneath(root, path, _WRITE_FLAGS, make_dirs=True)
    with os.fdopen(fd, "wb") as target, default_storage.open(storage_name, "rb") as source:
        while chunk := source.read(workspace.CHUNK):
            target.write(chunk)
            digest.update(chunk)
        target.flush()
        done = os.fstat(target.fileno())
    return Entry(storage_name, done.st_size, done.st_mtime_ns, digest.hexdigest())


# --- after a call -----------------------------------------------------------------------------


def collect(
    tree: Tree,
    *,
    session_id: int,
    run_id: int | None,
    asks: Callable[[str], bool],
) -> Report:
    """Bring back what the server changed in the folder. `asks(tool)`: whether the
    workspace's `tool` (`write_file`, `delete_file`) would wait for a person in this session
    (or is not offered there) and nobody approved this call: such changes are refused."""
    report = Report()
    limit = workspace.file_limit()
    budget = (workspace.max_files() + 1) * ENTRIES_PER_FILE
    scanned = _scan(tree.folder, budget=budget)
    report.refused.extend(scanned.refused)
    for path, found in sorted(scanned.files.items()):
        entry = tree.known.get(path)
        if entry is not None and (found.st_size, found.st_mtime_ns) == (entry.size, entry.mtime_ns):
            continue
        try:
            clean = workspace.clean_path(path)
        except PlanError:
            report.refused.append(f"{shown(path)} (not a name the workspace takes)")
            continue
        if found.st_size > limit:
            report.refused.append(
                f"{clean} ({found.st_size} bytes; a workspace file may hold at most {limit})"
            )
            continue
        try:
            data = _read(tree.folder, clean, limit)
        except OSError:
            data = None
        if data is None:
            report.refused.append(f"{clean} (a link or special file: never followed)")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if entry is not None and digest == entry.digest:
            continue  # touched, not changed
        emptied = entry is not None and entry.size > 0 and not data.strip()
        tool = "delete_file" if emptied else "write_file"
        if asks(tool):
            report.refused.append(f"{clean} (the workspace's {tool} asks a person first)")
            continue
        try:
            row = services.workspace_file_store(
                session_id=session_id, path=clean, data=data, run_id=run_id
            )
        except PlanError as exc:
            report.refused.append(f"{clean} ({exc.message})")
            continue
        tree.known[clean] = Entry(row.storage_name, len(data), found.st_mtime_ns, digest)
        report.written.append(f"{clean} ({len(data)} bytes)")
    gone = set(tree.known) - set(scanned.files) if scanned.complete else set()
    for path in sorted(gone):
        if asks("delete_file"):
            report.refused.append(
                f"the deletion of {path} (the workspace's delete_file asks a person first)"
            )
            continue
        _delete(session_id, path, tree.known.pop(path), report)
    return report


def _delete(session_id: int, path: str, entry: Entry, report: Report) -> None:
    row = selectors.workspace_file(session_id=session_id, path=path)
    if row is None:
        return  # gone already
    if row.storage_name != entry.storage_name:
        # Someone wrote it again since the call began: theirs stands.
        report.refused.append(f"the deletion of {path} (it was written again meanwhile)")
        return
    try:
        services.workspace_file_delete(session_id=session_id, path=path)
    except PlanError as exc:
        if exc.code != "not_found":
            raise
    report.deleted.append(path)


# --- a conversation's sync --------------------------------------------------------------------


@dataclass
class Sync:
    """One call's way between the session's files and a tree (`agents.mcp.roots.Files`):
    `run_db` runs each step off the event loop (the run host's lane), `asks` is as for
    `collect` (asked there, in that thread)."""

    session_id: int
    run_id: int | None
    asks: Callable[[str], bool]
    run_db: Callable[..., Awaitable[Any]]

    async def before(self, tree: Tree) -> None:
        await self.run_db(materialize, tree, session_id=self.session_id)

    async def after(self, tree: Tree) -> str:
        report: Report = await self.run_db(
            collect, tree, session_id=self.session_id, run_id=self.run_id, asks=self.asks
        )
        return report.note()
