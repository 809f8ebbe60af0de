// The board's edit marks (frontend/js/board-marks.js) under `node --test`: a person's edit is
// pending until a hint carries it, then seen; an event arriving late never undoes "seen".
import assert from "node:assert/strict";
import { test } from "node:test";

import { AgentMarks } from "../../frontend/js/board-marks.js";

const person = { kind: "user", user_id: 1, run_id: null, username: "noa" };
const agent = { kind: "agent", user_id: null, run_id: 7, username: null };

/** @param {object} fields */
const event = (fields) => ({ plan_id: 3, version: 2, subtask_id: 11, actor: person, ...fields });

test("a person's edit is pending; the agent's own changes are not", () => {
  const marks = new AgentMarks(() => {});
  assert.equal(marks.markPending(event({ actor: agent })), false);
  assert.equal(marks.markPending(event({})), true);
  assert.equal(marks.edits.get(11), "pending");
  assert.equal(marks.markPending(event({ version: 3 })), false, "already pending: no change");
});

test("an edit a hint already carried stays seen when its event comes late", () => {
  const marks = new AgentMarks(() => {});
  marks.markSeen(3, [{ version: 4, subtask_id: 11 }]);
  assert.equal(marks.markPending(event({ version: 4 })), false);
  assert.equal(marks.edits.get(11), "seen");
  // A later edit of the same card, or an edit of another plan at that version, is pending.
  assert.equal(marks.markPending(event({ version: 5 })), true);
  assert.equal(marks.markPending(event({ plan_id: 9, version: 4, subtask_id: 12 })), true);
  for (const timer of marks.seenTimers.values()) clearTimeout(timer);
});
