"""Money and token counts on server-rendered pages, by the rules of `frontend/js/format.js`
(both checked against tests/js/format_cases.json): `{{ plan.cost_usd|usd }}`,
`{{ plan.tokens|tokens }}`."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django import template

register = template.Library()


def _decimal(value: object) -> Decimal:
    try:
        amount = Decimal(str(value)) if value is not None else Decimal(0)
    except InvalidOperation:
        return Decimal(0)
    return amount if amount.is_finite() else Decimal(0)


def _trim(text: str) -> str:
    """Trailing zeros beyond two decimals go: "0.0020" → "0.002"; "0.10" stays."""
    whole, _, fraction = text.partition(".")
    while len(fraction) > 2 and fraction.endswith("0"):
        fraction = fraction[:-1]
    return f"{whole}.{fraction}" if fraction else whole


def format_usd(value: object) -> str:
    """Two significant digits under a dollar ("$0.025"), cents from a dollar up ("$1.23")."""
    amount = _decimal(value)
    if amount <= 0:
        return "$0"
    if amount < 1:
        quantum = Decimal(1).scaleb(amount.adjusted() - 1)
        rounded = amount.quantize(quantum, rounding=ROUND_HALF_UP)
        if rounded < 1:
            # A quantum made by scaleb is finite: its exponent is an int, not typeshed's "n"/"F".
            decimals = max(2, -quantum.as_tuple().exponent)  # type: ignore[operator]
            return f"${_trim(f'{rounded:.{decimals}f}')}"
    return f"${amount.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,.2f}"


def format_tokens(value: object) -> str:
    """A token count in a few characters: 740, 8.7k, 12.4k, 123k, 1.2M."""
    count = int(_decimal(value).to_integral_value(rounding=ROUND_HALF_UP))
    if count <= 0:
        return "0"
    if count < 1000:
        return str(count)
    for size, unit in ((10**3, "k"), (10**6, "M"), (10**9, "B")):
        scaled = Decimal(count) / size
        digits = 1 if scaled < 100 else 0
        shown = scaled.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
        if shown < 1000 or unit == "B":
            text = f"{shown:.{digits}f}"
            return f"{text.removesuffix('.0')}{unit}"
    return str(count)


register.filter("usd", format_usd)
register.filter("tokens", format_tokens)
