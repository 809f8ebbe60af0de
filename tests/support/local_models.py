"""In-process models for tests, plugged in the way the app plugs in its demo model: through
`settings.PLANBOARD_LOCAL_MODELS` (provider name -> dotted path).

A dotted path names one object for the whole process, while each test wants its own model, so
the settings name a `ModelSlot` and the test puts its model in the slot.
"""

from __future__ import annotations

from typing import Any

# agents.local_models loads neither litellm nor agents.llm: cheap to import here.
from agents.local_models import LocalModel, ProviderReply


class ModelSlot:
    """Answers with whatever model a test put in it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.model: LocalModel | None = None

    def respond(self, **kwargs: Any) -> ProviderReply:
        if self.model is None:
            raise RuntimeError(f"no model in the test slot {self.name!r}")
        return self.model.respond(**kwargs)

    def __getattr__(self, name: str) -> Any:
        # Optional abilities (`stream`, `price_per_token`) are the slotted model's own.
        if name.startswith("_") or self.model is None:
            raise AttributeError(name)
        return getattr(self.model, name)


SCRIPTED = ModelSlot("SCRIPTED")
HOOKED = ModelSlot("HOOKED")
SECOND = ModelSlot("SECOND")


def install(settings: Any, *, provider: str, slot: ModelSlot, model: LocalModel) -> None:
    """Make `<provider>/...` model strings answer from `model` for this test."""
    slot.model = model
    settings.PLANBOARD_LOCAL_MODELS = {
        **settings.PLANBOARD_LOCAL_MODELS,
        provider: f"{__name__}.{slot.name}",
    }
