"""What a model costs and how much it writes: Planboard's own prices, litellm's price list, and
the prices litellm is told so that it does not search its list on every call."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import litellm

from agents import local_models

_MILLION = Decimal(1_000_000)


@dataclass(frozen=True)
class Prices:
    """What a model charges, in US dollars per token."""

    input_per_token: Decimal
    output_per_token: Decimal

    @classmethod
    def per_million(cls, input_price: Decimal, output_price: Decimal) -> Prices:
        return cls(Decimal(input_price) / _MILLION, Decimal(output_price) / _MILLION)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> Decimal:
        return prompt_tokens * self.input_per_token + completion_tokens * self.output_per_token


def known_prices(model: str) -> Prices | None:
    """The model's price as far as Planboard knows it: an in-process model's own (free when it
    names none), else litellm's price list; None when nobody knows."""
    if local_models.is_local_model(model):
        price = local_models.price_per_token(model)
        return Prices(Decimal(str(price)), Decimal(str(price)))
    return _listed_prices(model)


@functools.lru_cache(maxsize=64)
def _listed_prices(model: str) -> Prices | None:
    if model in _unpriced:
        return None  # litellm was told a zero to spare its search (`_price_for_litellm`)
    try:
        info = litellm.get_model_info(model)
    except Exception:  # not in litellm's price list
        return None
    prices = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if prices[0] is None or prices[1] is None:
        return None
    return Prices(Decimal(str(prices[0])), Decimal(str(prices[1])))


def max_output_tokens(model: str) -> int | None:
    """The most tokens the model writes in one answer, when litellm knows it."""
    if local_models.is_local_model(model):
        return None
    try:
        found = litellm.get_model_info(model).get("max_output_tokens")
    except Exception:  # unknown models: no limit of ours
        return None
    return int(found) if found else None


# Hosted models litellm cannot price: told a zero (`_price_for_litellm`), or failed once (asking
# again fails the same way, slowly). Planboard treats their cost as unknown.
_unpriced: set[str] = set()


# Model names litellm has been told a price for (`_price_for_litellm`).
_priced: set[str] = set()


def _price_for_litellm(name: str) -> None:
    """Tell litellm what a model costs, once per model name.

    litellm prices every answer for its own bookkeeping, and looks a model missing from its
    price list up under many spellings first, on every call: about a third of a local model's
    streamed call (docs/PERFORMANCE.md, benchmark 4), 3 % of a worker's CPU with a hosted
    model it does not know (benchmark 5). Our own cost (`_cost`) is unchanged: an in-process
    model's `price_per_token`; for a hosted model litellm does not know, the zero told here
    stays unknown to Planboard (`_unpriced`: budgets in dollars still refuse to guess)."""
    if name in _priced:
        return
    _priced.add(name)
    if local_models.is_local_model(name):
        price, provider = local_models.price_per_token(name), local_models.provider_of(name)
    elif _listed_prices(name) is None and "/" in name:
        price, provider = 0.0, name.split("/", 1)[0]
        _unpriced.add(name)
    else:
        return  # litellm knows it (or cannot route it: its call fails before pricing)
    litellm.register_model(
        {
            name: {
                "input_cost_per_token": price,
                "output_cost_per_token": price,
                "cache_creation_input_token_cost": 0.0,
                "cache_read_input_token_cost": 0.0,
                "litellm_provider": provider,
                "mode": "chat",
            }
        }
    )


def _cost(response: Any, model: str) -> float:
    if local_models.is_local_model(model):
        # An in-process model may name a price (the demo does, so costs show); else free.
        price = local_models.price_per_token(model)
        usage = getattr(response, "usage", None)
        tokens = int(getattr(usage, "prompt_tokens", 0) or 0) + int(
            getattr(usage, "completion_tokens", 0) or 0
        )
        return tokens * price
    if model in _unpriced:
        return 0.0
    try:
        return float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:  # prices are unknown for many self-hosted models
        _unpriced.add(model)
        return 0.0
