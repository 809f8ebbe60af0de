"""What a pool of live sessions does when a server says its tools, resources or prompts
changed (`agents.mcp.live.Live` hears the notice, whatever revision the server speaks)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from agents.mcp.listing import Refresher, refresh_in_thread
from agents.mcp.live import Gone, Live
from agents.mcp.outcome import Failure

logger = logging.getLogger(__name__)


@dataclass
class ChangeNotices:
    """List the server on the session that sent the notice and, when the listing is new to
    this pool, refresh the toolset (once at a time; a notice during a refresh asks for one
    more). Servers that announce a change right after they start (tools that depend on the
    client's capabilities) cost one listing per session, not a refresh each."""

    refresher: Refresher = refresh_in_thread
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)  # refreshes under way
    _refreshing: dict[int, bool] = field(default_factory=dict)  # toolset: another asked for
    _listings: dict[int, str] = field(default_factory=dict)  # toolset: digest last refreshed

    def heard(self, live: Live) -> None:
        toolset_id = live.key[1]
        if toolset_id in self._refreshing:
            self._refreshing[toolset_id] = True
            return
        self._refreshing[toolset_id] = False
        task = asyncio.get_running_loop().create_task(self._refresh(live))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _refresh(self, live: Live) -> None:
        toolset_id = live.key[1]
        try:
            while True:
                try:
                    digest = await live.listing_digest()
                    if self._listings.get(toolset_id) != digest:
                        self._listings[toolset_id] = digest
                        await self.refresher(toolset_id)
                except (Gone, Failure):
                    pass  # the session ended meanwhile: its successor lists for itself
                except Exception:
                    logger.warning("refreshing toolset %s failed", toolset_id, exc_info=True)
                if not self._refreshing.get(toolset_id):
                    break
                self._refreshing[toolset_id] = False
        finally:
            self._refreshing.pop(toolset_id, None)
