"""Garbage-collector settings for the long-running processes (web server, Celery workers).

After start-up a Django process holds a few hundred thousand objects that live for ever
(modules, models, URL patterns, litellm's tables). CPython's full collections walk them all:
80-165 ms pauses, about twice a second under a websocket fan-out, which stalled every socket
and request of the process (docs/PERFORMANCE.md). Freezing them moves them out of the
collector's sight; a larger young generation makes collections rarer. Cycles are still
collected, only less often.
"""

from __future__ import annotations

import gc

# Young-generation allocations between collections (CPython's default is 700), and how many
# collections of one generation trigger one of the next (defaults 10 and 10).
THRESHOLDS = (50_000, 20, 100)


def freeze_startup_objects() -> None:
    """Call once the process has imported and set up everything it serves with."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
