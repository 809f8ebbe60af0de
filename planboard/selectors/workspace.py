"""Workspace reads: a session's files, and one file's bytes."""

from __future__ import annotations

from typing import IO, Any

from django.core.files.storage import default_storage

from planboard.models import WorkspaceFile
from planboard.snapshots import serialize_workspace_file


def session_files(*, session_id: int) -> list[dict[str, Any]]:
    """The session's files, by path (`files` of the session snapshot)."""
    return [
        serialize_workspace_file(f)
        for f in WorkspaceFile.objects.filter(session_id=session_id).order_by("path")
    ]


def workspace_file_rows(*, session_id: int) -> list[WorkspaceFile]:
    """The session's file rows (paths, sizes, where their bytes are stored)."""
    return list(WorkspaceFile.objects.filter(session_id=session_id).order_by("path"))


def workspace_file(*, session_id: int, path: str) -> WorkspaceFile | None:
    """The file at exactly `path` (paths are looked up, never opened as given)."""
    if not isinstance(path, str) or "\x00" in path:
        return None
    return WorkspaceFile.objects.filter(session_id=session_id, path=path).first()


def workspace_file_bytes(file: WorkspaceFile) -> bytes:
    """The whole file (for small files and tests; downloads and the agent read it in
    chunks through `workspace_file_open`)."""
    with default_storage.open(file.storage_name, "rb") as handle:
        return handle.read()


def workspace_file_open(file: WorkspaceFile) -> IO[bytes]:
    """The file's bytes to read a chunk at a time (never whole: see `workspace.CHUNK`); the
    caller closes it."""
    return default_storage.open(file.storage_name, "rb")
