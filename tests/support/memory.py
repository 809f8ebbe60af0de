"""How much memory a piece of work holds at once, measured with tracemalloc in this process."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def peak_of(action: Callable[[], T]) -> tuple[T, int]:
    """What `action` returns, and the most memory it held at once (bytes)."""
    gc.collect()  # garbage from earlier work would count against the action
    tracemalloc.start()
    try:
        result = action()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak
