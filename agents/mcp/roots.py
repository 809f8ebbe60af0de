"""A live session's roots: the folder tree of the conversation's files a server is given
when its toolset declares the session's workspace as its root (`Toolset.roots`; the tree
itself and its sync: `agents.workspace_tree`). Each call on such a session lays the
session's files out in the tree first and brings back what the server changed after."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Protocol

from mcp import Client

from agents.mcp.outcome import Failure, ToolOutput
from agents.workspace_tree import Tree


class Files(Protocol):
    """How a conversation's files reach a tree and come back (`agents.workspace_tree.Sync`)."""

    async def before(self, tree: Tree) -> None: ...

    async def after(self, tree: Tree) -> str: ...


def with_tree(
    action: Callable[[Client], Awaitable[ToolOutput]], tree: Tree, files: Files
) -> Callable[[Client], Awaitable[ToolOutput]]:
    """`action` with the tree laid out before it and synced back after it; what was brought
    back (or refused) is said at the end of the result. A call that does not come back (timed
    out, its server stopped) brings nothing back: its session and tree are given up."""

    async def acting(session: Client) -> ToolOutput:
        try:
            await files.before(tree)
        except OSError as exc:
            raise Failure(
                f"the session's files could not be laid out for its server ({exc.strerror})."
            ) from None
        output = await action(session)
        note = await files.after(tree)
        if not note:
            return output
        return dataclasses.replace(output, text=f"{output.text}\n\n{note}")

    return acting
