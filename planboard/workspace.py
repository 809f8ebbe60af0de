"""The session workspace: files the agent writes, people download. Pure rules shared by the
services, selectors, views and the agent's tools: what a path may be, how big a file may be,
what the built-in `workspace` toolset offers, and how a file is served.

Paths are checked as text only: the bytes are stored under a generated storage name, so a
path is a label in the database and never touches a file system.
"""

from __future__ import annotations

import codecs
import mimetypes
import re
from collections.abc import AsyncIterator, Iterator
from typing import IO, Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header

from planboard.exceptions import PlanError
from planboard.models import WORKSPACE_PATH_MAX, ToolsetTool, WorkspaceFile

TOOLSET_NAME = "workspace"
TOOLSET_TITLE = "Session files"
MAX_DEPTH = 5
SEGMENT_MAX = 100
# Letters, digits, '.', '_' and '-'; a segment starts with a letter, digit or '_' (so no
# '.', '..' or hidden files).
_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")
# Served as text/plain (never as what the extension claims: no HTML, no SVG, no script).
_TEXT_TYPES = {"application/json", "application/xml", "application/javascript"}
# A file is read this much at a time, never whole (downloads, the agent's read_file).
CHUNK = 65536


def storage_folder(session_id: int) -> str:
    """Where a session's files are stored (under generated names) in the default storage."""
    return f"workspace/{session_id}"


def file_limit() -> int:
    """Bytes one file may hold (UTF-8), `PLANBOARD_WORKSPACE_FILE_LIMIT`, default 1 MB."""
    return int(getattr(settings, "PLANBOARD_WORKSPACE_FILE_LIMIT", 1_000_000))


def max_files() -> int:
    """Files one session may hold, `PLANBOARD_WORKSPACE_MAX_FILES`, default 100."""
    return int(getattr(settings, "PLANBOARD_WORKSPACE_MAX_FILES", 100))


def clean_path(value: Any) -> str:
    """A relative path like `notes/day-1.md`, or `PlanError` saying what is wrong with it."""
    if not isinstance(value, str):
        raise PlanError("'path' must be text, like 'notes/day-1.md'.")
    path = value.strip()
    if not path:
        raise PlanError("'path' must not be empty; give a file name like 'notes.md'.")
    if len(path) > WORKSPACE_PATH_MAX:
        raise PlanError(
            f"'path' is {len(path)} characters long; the limit is {WORKSPACE_PATH_MAX}."
        )
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path):
        raise PlanError("'path' must be relative to the workspace, like 'notes.md', not absolute.")
    if "\\" in path:
        raise PlanError("'path' separates folders with '/', not '\\'.")
    segments = path.split("/")
    if any(s in ("..", ".") for s in segments):
        raise PlanError("'path' must not contain '.' or '..' parts; name the file directly.")
    if len(segments) > MAX_DEPTH:
        raise PlanError(f"'path' may have at most {MAX_DEPTH} parts (folders and the file name).")
    for segment in segments:
        if not segment:
            raise PlanError("'path' has an empty part ('//', or a '/' at the end).")
        if len(segment) > SEGMENT_MAX or not _SEGMENT.match(segment):
            raise PlanError(
                f"'path' part {segment[:40]!r} is not allowed: use letters, digits, '.', '_' "
                f"and '-' (at most {SEGMENT_MAX} characters, not starting with '.' or '-')."
            )
    return path


def encode_content(value: Any) -> bytes:
    """A file's text as the bytes to store, or `PlanError` (not text, or too large)."""
    if not isinstance(value, str):
        raise PlanError("'content' must be text.")
    data = value.encode("utf-8", errors="replace")
    check_size(len(data))
    return data


def check_size(size: int) -> None:
    """`PlanError` when a file of `size` bytes is over `file_limit`."""
    limit = file_limit()
    if size > limit:
        raise PlanError(
            f"'content' is {size} bytes; a workspace file may hold at most {limit} bytes."
        )


def content_type(path: str) -> str:
    """What a download is served as: text/plain for text, else application/octet-stream."""
    guessed, _ = mimetypes.guess_type(path, strict=False)
    if guessed is None or guessed.startswith("text/") or guessed in _TEXT_TYPES:
        return "text/plain; charset=utf-8"
    return "application/octet-stream"


def file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class FileStream(StreamingHttpResponse):
    """A file streamed a chunk at a time under WSGI and under ASGI alike. Django serves a
    synchronous iterator under ASGI (daphne) by first reading all of it into a list; here
    each chunk is read in a worker thread as the server asks for it."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self.streaming_content
        if not isinstance(chunks, Iterator):  # built from a reader: never asynchronous
            raise TypeError("FileStream streams a synchronous iterator")
        read = sync_to_async(_next_chunk, thread_sensitive=False)
        while (chunk := await read(chunks)) is not None:
            yield chunk


def _next_chunk(chunks: Iterator[bytes]) -> bytes | None:
    return next(chunks, None)


def file_response(file: WorkspaceFile, handle: IO[bytes]) -> FileStream:
    """A download, streamed from `handle` (closed when done): always an attachment, never
    sniffed, never rendered as a page (the agent wrote it, and its words are untrusted)."""
    response = FileStream(_chunks(handle, file.size), content_type=content_type(file.path))
    response["Content-Length"] = str(file.size)
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=file_name(file.path)
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, no-store"
    return response


def _chunks(handle: IO[bytes], size: int) -> Iterator[bytes]:
    """At most `size` bytes of `handle` (what the file's row records: a blob that grew behind
    its back is not served further), a chunk at a time; closes `handle`."""
    try:
        left = size
        while left > 0:
            chunk = handle.read(min(CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            yield chunk
    finally:
        handle.close()


def read_text_head(handle: IO[bytes], limit: int) -> tuple[str, int]:
    """The first `limit` characters of a UTF-8 file, and how many characters it has: read a
    chunk at a time, so only what is kept stays in memory."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    kept: list[str] = []
    kept_length = total = 0
    while True:
        data = handle.read(CHUNK)
        text = decoder.decode(data, final=not data)
        total += len(text)
        if kept_length < limit:
            kept.append(text[: limit - kept_length])
            kept_length += len(kept[-1])
        if not data:
            return "".join(kept), total


# --- the built-in toolset ---------------------------------------------------------------------

_PATH = {
    "type": "string",
    "description": (
        "Relative path, like 'itinerary.md' or 'notes/day-1.md': letters, digits, '.', '_', "
        "'-', folders separated by '/'."
    ),
    "maxLength": WORKSPACE_PATH_MAX,
}

# What the toolset offers; `policy` is each tool's default (staff may override it).
TOOLS: list[dict[str, Any]] = [
    {
        "name": "write_file",
        "description": (
            "Create or replace a text file in this session's workspace. People see the "
            "session's files and can download them. Use it for results worth keeping "
            "(itineraries, drafts, tables as markdown or CSV)."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "path": _PATH,
                "content": {"type": "string", "description": "The whole text of the file."},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
        "read_only": False,
        "policy": ToolsetTool.Policy.AUTO,
        # A write that empties a file with content discards it as a delete would: such a call
        # follows this tool's policy instead of its own (`discards_content`).
        "discarding_follows": "delete_file",
    },
    {
        "name": "read_file",
        "description": "Read a text file of this session's workspace.",
        "input_schema": {
            "type": "object",
            "properties": {"path": _PATH},
            "required": ["path"],
            "additionalProperties": False,
        },
        "read_only": True,
        "policy": ToolsetTool.Policy.AUTO,
    },
    {
        "name": "list_files",
        "description": "List the files of this session's workspace with their sizes.",
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": False},
        "read_only": True,
        "policy": ToolsetTool.Policy.AUTO,
    },
    {
        "name": "delete_file",
        "description": "Delete a file of this session's workspace.",
        "input_schema": {
            "type": "object",
            "properties": {"path": _PATH},
            "required": ["path"],
            "additionalProperties": False,
        },
        "read_only": False,
        "policy": ToolsetTool.Policy.ASK,
    },
]
TOOL_NAMES = frozenset(t["name"] for t in TOOLS)


def default_policy(tool: str) -> str | None:
    """A built-in tool's default policy (None: not one of ours)."""
    return next((t["policy"] for t in TOOLS if t["name"] == tool), None)


def discarding_follows(tool: str) -> str | None:
    """The tool whose policy a call of `tool` that discards content follows (None: its own)."""
    return next((t.get("discarding_follows") for t in TOOLS if t["name"] == tool), None)


def discards_content(content: Any, existing_size: int | None) -> bool:
    """Whether writing `content` over a file of `existing_size` bytes (None: no such file)
    throws its content away: an overwrite that leaves nothing (or only blanks) of a file that
    held something."""
    return bool(existing_size) and isinstance(content, str) and not content.strip()
