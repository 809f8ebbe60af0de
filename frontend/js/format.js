// The one way every page prints money and token counts (the server-rendered pages use the
// same rules: planboard/templatetags/planboard_format.py; both are checked against
// tests/js/format_cases.json).

/**
 * Strip trailing zeros beyond two decimals: "0.0020" → "0.002", "0.10" stays.
 * @param {string} text
 */
function trimDecimals(text) {
  const [whole, fraction = ""] = text.split(".");
  let kept = fraction;
  while (kept.length > 2 && kept.endsWith("0")) kept = kept.slice(0, -1);
  return kept ? `${whole}.${kept}` : whole;
}

/**
 * Dollars as people read them: two significant digits under a dollar ("$0.025"), cents from
 * a dollar up ("$1.23", "$1,234.50"); "$0" for nothing.
 * @param {number | string | null | undefined} value
 */
export function formatUsd(value) {
  const amount = Number(value || 0);
  if (!Number.isFinite(amount) || amount <= 0) return "$0";
  if (amount < 1) {
    const rounded = Number(amount.toPrecision(2));
    if (rounded < 1) {
      const decimals = Math.max(2, 1 - Math.floor(Math.log10(rounded)));
      return `$${trimDecimals(rounded.toFixed(decimals))}`;
    }
  }
  return `$${amount.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

/**
 * A token count in a few characters: 740, 8.7k, 12.4k, 123k, 1.2M.
 * @param {number | string | null | undefined} value
 */
export function formatTokens(value) {
  const count = Math.max(0, Math.round(Number(value || 0)));
  if (!Number.isFinite(count)) return "0";
  if (count < 1000) return String(count);
  for (const [size, unit] of /** @type {[number, string][]} */ ([
    [1e3, "k"],
    [1e6, "M"],
    [1e9, "B"],
  ])) {
    const scaled = count / size;
    const digits = scaled < 100 ? 1 : 0;
    const shown = Number(scaled.toFixed(digits));
    if (shown < 1000 || unit === "B") return `${shown.toFixed(digits).replace(/\.0$/, "")}${unit}`;
  }
  return String(count);
}
