// What the agent spent, in words: one cost-and-tokens phrase, and the same phrase named by its
// scope ("This run", "This plan", "This session"), so every figure on a page says what it
// counts. The numbers themselves are format.js's.

import { formatTokens, formatUsd } from "./format.js";
import { t } from "./i18n.js";

/** "$0.012 · 4.6k tokens" for a cost and token count; "" when nothing was spent. */
export function formatCost(costUsd, tokens) {
  if (!tokens && !costUsd) return "";
  return t("cost", { cost: formatUsd(costUsd), tokens: formatTokens(tokens) });
}

/**
 * "This plan: $0.012 · 4.6k tokens"; "" when nothing was spent.
 * @param {"run" | "plan" | "session"} scope
 * @param {number | string | null | undefined} costUsd
 * @param {number | null | undefined} tokens
 */
export function scopedCost(scope, costUsd, tokens) {
  const usage = formatCost(Number(costUsd || 0), Number(tokens || 0));
  if (!usage) return "";
  if (scope === "run") return t("run_usage", { usage });
  return scope === "plan" ? t("plan_usage", { usage }) : t("session_usage", { usage });
}
