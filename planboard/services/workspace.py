"""The session workspace: the built-in `workspace` toolset, and the files its tools write.

A write stores the bytes under a new storage name first (no transaction is held while a
storage backend works), then records the row under the session's lock; the blob it replaces
is removed once that commits. A blob whose row never committed is removed at once when the
write fails here; one left by an enclosing transaction that rolled back later is orphaned,
never served (nothing names it). Every change broadcasts `session.files` on commit.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction

from planboard import selectors, workspace
from planboard.exceptions import PlanError
from planboard.models import SessionToolset, Toolset, ToolsetTool, WorkspaceFile
from planboard.services._core import _lock_session, _publish_session


def _publish_files(session_id: int, *, action: str, path: str) -> None:
    _publish_session(
        session_id,
        {
            "type": "session.files",
            "session_id": session_id,
            "action": action,
            "path": path,
            "files": selectors.session_files(session_id=session_id),
        },
    )


def _forget_blob(name: str) -> None:
    transaction.on_commit(lambda: default_storage.delete(name))


def forget_blob_of_deleted_row(sender: Any, instance: WorkspaceFile, **kwargs: Any) -> None:
    """`post_delete` of a file row (its own delete or a session's cascade): the blob goes once
    the deletion commits."""
    if instance.storage_name:
        _forget_blob(instance.storage_name)


# --- the built-in toolset ---------------------------------------------------------------------


def toolset_ensure_workspace() -> Toolset:
    """The built-in `workspace` toolset, made (with its tools) the first time it is needed."""
    toolset = Toolset.objects.filter(name=workspace.TOOLSET_NAME).first()
    if toolset is not None:
        return toolset
    try:
        with transaction.atomic():
            toolset = Toolset.objects.create(
                name=workspace.TOOLSET_NAME,
                title=workspace.TOOLSET_TITLE,
                kind=Toolset.Kind.BUILTIN,
            )
            ToolsetTool.objects.bulk_create(
                [
                    ToolsetTool(
                        toolset=toolset,
                        name=t["name"],
                        description=t["description"],
                        input_schema=t["input_schema"],
                        read_only=t["read_only"],
                        policy=t["policy"],
                    )
                    for t in workspace.TOOLS
                ]
            )
    except IntegrityError:  # made by a concurrent caller meanwhile
        return Toolset.objects.get(name=workspace.TOOLSET_NAME)
    return toolset


def enable_workspace(session_id: int) -> None:
    """Within the caller's transaction: a new session offers the workspace (unless staff
    turned it off); its owner may switch it off like any toolset."""
    toolset = toolset_ensure_workspace()
    if toolset.enabled and toolset.kind == Toolset.Kind.BUILTIN:
        SessionToolset.objects.get_or_create(session_id=session_id, toolset=toolset)


# --- files ------------------------------------------------------------------------------------


def workspace_file_write(
    *, session_id: int, path: str, content: str, run_id: int | None = None
) -> WorkspaceFile:
    """Create or replace a file of a session's workspace (`run_id`: the run whose agent
    wrote it). Raises `PlanError` for a bad path, too much content, or too many files."""
    clean = workspace.clean_path(path)
    data = workspace.encode_content(content)
    return _store(session_id=session_id, path=clean, data=data, run_id=run_id)


def workspace_file_store(
    *, session_id: int, path: str, data: bytes, run_id: int | None = None
) -> WorkspaceFile:
    """Create or replace a file with these bytes, as they are (a file an MCP server wrote in
    the session's folder tree: `agents.workspace_tree`), within the same limits as
    `workspace_file_write`; `PlanError` says which one it passes."""
    clean = workspace.clean_path(path)
    if not isinstance(data, bytes):
        raise PlanError("A file's content must be bytes.")
    workspace.check_size(len(data))
    return _store(session_id=session_id, path=clean, data=data, run_id=run_id)


def _store(*, session_id: int, path: str, data: bytes, run_id: int | None) -> WorkspaceFile:
    clean = path
    folder = workspace.storage_folder(session_id)
    name = default_storage.save(f"{folder}/{uuid.uuid4().hex}", ContentFile(data))
    try:
        with transaction.atomic():
            _lock_session(session_id)
            row = WorkspaceFile.objects.filter(session_id=session_id, path=clean).first()
            if row is None:
                limit = workspace.max_files()
                if WorkspaceFile.objects.filter(session_id=session_id).count() >= limit:
                    raise PlanError(
                        f"The workspace holds {limit} files already, its limit; delete one or "
                        "write into an existing file."
                    )
                row = WorkspaceFile(session_id=session_id, path=clean)
                action = "created"
            else:
                _forget_blob(row.storage_name)
                action = "updated"
            row.storage_name = name
            row.size = len(data)
            row.produced_by_id = run_id
            row.save()
            _publish_files(session_id, action=action, path=clean)
    except BaseException:
        default_storage.delete(name)
        raise
    return row


def workspace_file_delete(*, session_id: int, path: str) -> None:
    """Remove a file of a session's workspace; `PlanError(code=not_found)` if it has none."""
    clean = workspace.clean_path(path)
    with transaction.atomic():
        _lock_session(session_id)
        row = WorkspaceFile.objects.filter(session_id=session_id, path=clean).first()
        if row is None:
            raise PlanError(f"The workspace has no file {clean!r}.", code="not_found")
        row.delete()  # the blob goes on commit (`forget_blob_of_deleted_row`)
        _publish_files(session_id, action="deleted", path=clean)
