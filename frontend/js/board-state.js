// The board's model: plan snapshots and the events that move them forward.
// applyEvent mirrors planboard/snapshots.py:apply_event exactly, so that the browser and the
// server agree on what a plan looks like at every version.

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").PlanEvent} PlanEvent */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */

/** Raised when an event does not follow the snapshot: the caller must refetch. */
export class VersionGap extends Error {
  /** @param {number} snapshotVersion @param {number} eventVersion */
  constructor(snapshotVersion, eventVersion) {
    super(`event version ${eventVersion} does not follow snapshot version ${snapshotVersion}`);
    this.name = "VersionGap";
    this.snapshotVersion = snapshotVersion;
    this.eventVersion = eventVersion;
  }
}

/**
 * @template T
 * @param {T} value
 * @returns {T}
 */
const clone = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

/**
 * The snapshot at `event.version`, given the one at `event.version - 1`.
 * @param {PlanSnapshot} snapshot
 * @param {PlanEvent} event
 * @returns {PlanSnapshot}
 */
export function applyEvent(snapshot, event) {
  if (event.version !== snapshot.version + 1) {
    throw new VersionGap(snapshot.version, event.version);
  }
  const patch = event.patch;
  const result = clone(snapshot);
  Object.assign(result, clone(patch.plan));
  // A Map keeps insertion order like a Python dict: existing ids first, new ones appended.
  /** @type {Map<number, SubtaskSnapshot>} */
  const byId = new Map(result.subtasks.map((subtask) => [subtask.id, subtask]));
  for (const removed of patch.remove || []) byId.delete(removed);
  for (const subtask of patch.upsert || []) byId.set(subtask.id, clone(subtask));
  let order = patch.order;
  if (order === null || order === undefined) {
    order = result.subtasks.map((subtask) => subtask.id).filter((id) => byId.has(id));
    for (const id of byId.keys()) if (!order.includes(id)) order.push(id);
  }
  result.subtasks = order.map((id) => {
    if (!byId.has(id)) throw new Error(`event ${event.version} orders unknown subtask ${id}`);
    return byId.get(id);
  });
  result.subtasks.forEach((subtask, index) => {
    subtask.index = index;
  });
  return result;
}

/**
 * The plan before its first event: replaying every event from here rebuilds it.
 * @param {{id: number, session_id?: number | null, owner?: PlanSnapshot["owner"]}} plan
 * @returns {PlanSnapshot}
 */
export function emptyPlan(plan) {
  return {
    id: plan.id,
    session_id: plan.session_id ?? null,
    owner: clone(plan.owner) ?? null,
    name: "",
    description: "",
    expected_outcome: "",
    state: "todo",
    outcome: "",
    version: 0,
    created_at: null,
    finished_at: null,
    subtasks: [],
  };
}

/**
 * Every snapshot from version 0 to the last event, for the history replay.
 * @param {PlanSnapshot} plan
 * @param {PlanEvent[]} events
 * @param {PlanSnapshot | null} [base]
 * @returns {PlanSnapshot[]}
 */
export function replay(plan, events, base = null) {
  // `base`: the board before the first of `events` when they are not the whole history.
  const snapshots = [base || emptyPlan(plan)];
  for (const event of events) {
    snapshots.push(applyEvent(snapshots[snapshots.length - 1], event));
  }
  return snapshots;
}

export const STATES = ["todo", "in_progress", "done", "abandoned"];
export const FINISHED = new Set(["done", "abandoned"]);

/** @param {PlanSnapshot | null} plan */
export function isFinished(plan) {
  return Boolean(plan) && FINISHED.has(plan.state);
}

/** @param {PlanSnapshot | null} plan */
export function progress(plan) {
  const subtasks = plan ? plan.subtasks : [];
  return {
    total: subtasks.length,
    done: subtasks.filter((s) => s.state === "done").length,
    abandoned: subtasks.filter((s) => s.state === "abandoned").length,
  };
}

/**
 * Does this object look like a plan snapshot (e.g. a REST response)?
 * @param {any} value
 * @returns {value is PlanSnapshot}
 */
export function isPlanSnapshot(value) {
  return (
    Boolean(value) &&
    typeof value === "object" &&
    Number.isInteger(value.id) &&
    Number.isInteger(value.version) &&
    Array.isArray(value.subtasks)
  );
}
