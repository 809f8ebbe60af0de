// formatUsd and formatTokens against the cases the server's template filters share
// (tests/planboard/test_format.py runs the same table through planboard_format).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { formatTokens, formatUsd } from "../../frontend/js/format.js";

const cases = JSON.parse(readFileSync(new URL("./format_cases.json", import.meta.url), "utf8"));

test("formatUsd: two significant digits under a dollar, cents above", () => {
  for (const [value, expected] of cases.usd) assert.equal(formatUsd(value), expected, String(value));
});

test("formatTokens: compact counts", () => {
  for (const [value, expected] of cases.tokens) {
    assert.equal(formatTokens(value), expected, String(value));
  }
});
