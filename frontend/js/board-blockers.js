// What a subtask waits for (`blocked_by`: ids of subtasks of the same plan) as people see it:
// which blockers are still open (the card's "blocked by #2" badge), and the detail panel's
// section that lists them and, for people who may edit, sets them with one checkbox per other
// card, numbered from 1. A card that already waits for this one (directly or further down
// the chain) cannot be chosen: the server would refuse the circle anyway.

import { cardNumber } from "./board-card.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */

const FINISHED = new Set(["done", "abandoned"]);
// Cards whose chooser a person opened: the panel is rebuilt on every change of the plan.
const openChoosers = new Set();

/**
 * The subtasks `subtask` waits for that are not done or abandoned yet, in board order
 * (none for a finished subtask: nothing blocks it any more).
 * @param {SubtaskSnapshot} subtask
 * @param {PlanSnapshot | null} plan
 * @returns {SubtaskSnapshot[]}
 */
export function openBlockers(subtask, plan) {
  const ids = subtask.blocked_by || [];
  if (!plan || !ids.length || FINISHED.has(subtask.state)) return [];
  return plan.subtasks.filter((s) => ids.includes(s.id) && !FINISHED.has(s.state));
}

/**
 * The ids of every subtask that waits for `id`, directly or through others.
 * @param {number} id
 * @param {PlanSnapshot} plan
 */
function waitingFor(id, plan) {
  const found = new Set();
  const queue = [id];
  while (queue.length) {
    const current = queue.pop();
    for (const s of plan.subtasks) {
      if ((s.blocked_by || []).includes(current) && !found.has(s.id)) {
        found.add(s.id);
        queue.push(s.id);
      }
    }
  }
  return found;
}

/** @param {SubtaskSnapshot} s */
function label(s) {
  return `${cardNumber(s.index)} ${s.name}`;
}

/**
 * The panel's "Waits for" section: a read-only list, or (editable) a chooser that saves at
 * each change through `save(ids)`. Null when there is nothing to show.
 * @param {SubtaskSnapshot} subtask
 * @param {PlanSnapshot} plan
 * @param {{editable: boolean, save: (ids: number[]) => Promise<boolean>}} options
 */
export function blockersSection(subtask, plan, { editable, save }) {
  const chosen = new Set(subtask.blocked_by || []);
  const blockers = plan.subtasks.filter((s) => chosen.has(s.id));
  const others = plan.subtasks.filter((s) => s.id !== subtask.id);
  if (!blockers.length && (!editable || !others.length)) return null;
  const summary = blockers.length
    ? blockers.map((s) => (FINISHED.has(s.state) ? `${label(s)} ✓` : label(s))).join(", ")
    : t("blocked_by_none");
  if (!editable) {
    return h(
      "section",
      { class: "panel-field panel-blockers" },
      h("h4", { class: "panel-label", text: t("blocked_by") }),
      h("p", { class: "panel-text", text: summary }),
    );
  }
  const circle = waitingFor(subtask.id, plan);
  const boxes = others.map((s) =>
    h(
      "label",
      { class: "blocker-choice", title: circle.has(s.id) ? t("blocked_by_circle") : "" },
      h("input", {
        type: "checkbox",
        name: "blocked_by",
        value: String(s.id),
        checked: chosen.has(s.id),
        disabled: circle.has(s.id),
      }),
      h("span", { text: label(s) }),
    ),
  );
  const details = h(
    "details",
    { class: "panel-field panel-blockers", open: openChoosers.has(subtask.id) },
    h(
      "summary",
      { class: "panel-label" },
      h("span", { text: t("blocked_by") }),
      h("span", { class: "blockers-summary", text: summary }),
    ),
    h("p", { class: "panel-muted", text: t("blocked_by_help") }),
    h("div", { class: "blocker-choices", role: "group", "aria-label": t("blocked_by") }, boxes),
  );
  details.addEventListener("toggle", () => {
    if (details.open) openChoosers.add(subtask.id);
    else openChoosers.delete(subtask.id);
  });
  details.addEventListener("change", () => {
    const picked = new Set(
      [...details.querySelectorAll("input[name=blocked_by]:checked")].map((box) =>
        Number(/** @type {HTMLInputElement} */ (box).value),
      ),
    );
    save(plan.subtasks.filter((s) => picked.has(s.id)).map((s) => s.id));
  });
  return details;
}
