// The browser's reducer (frontend/js/board-state.js) against the server's, under `node --test`:
// tests/system/test_reducer_parity.py records a plan's history through the services and
// passes every snapshot and event in PLANBOARD_PARITY_FIXTURE; replaying the events from the
// first snapshot must give each later snapshot exactly (planboard/snapshots.py:apply_event
// does the same on the server).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { applyEvent, VersionGap } from "../../frontend/js/board-state.js";

const fixture = JSON.parse(readFileSync(process.env.PLANBOARD_PARITY_FIXTURE ?? "", "utf8"));

test("every event applied to the snapshot before it gives the snapshot after it", () => {
  assert.ok(fixture.events.length >= 10, "the fixture covers the actions");
  let snapshot = fixture.snapshots[0];
  fixture.events.forEach((event, i) => {
    snapshot = applyEvent(snapshot, event);
    assert.deepEqual(snapshot, fixture.snapshots[i + 1], `after ${event.action} v${event.version}`);
  });
});

test("an event that skips a version is a gap, not a silent change", () => {
  const [first] = fixture.snapshots;
  const skipping = fixture.events[1];
  assert.throws(() => applyEvent(first, skipping), VersionGap);
});
