// The agent's tool work in the chat, in people's words: each call of a step is one activity
// line ("Finished #2 Book transport", "Wrote kyoto-itinerary.md", "Asked to run notes → write")
// with the raw call and its result behind the line's disclosure. Names come from the model and
// the tools: they are set as text (inside <em>), never as markup.

import { h, icon } from "./dom.js";
import { t } from "./i18n.js";

/** Statuses of a tool call that are final: its progress is over. */
export const ENDED_CALL = ["succeeded", "failed", "denied", "interrupted"];

/** The toolset part of a namespaced external tool's name ends at the first "__". */
const SEPARATOR = "__";
const WORKSPACE = "workspace";

/**
 * What one line says: a template key and its parameters (each shown emphasised, as text).
 * @typedef {object} Activity
 * @property {string} key the i18n key of the line's template
 * @property {Record<string, string>} params the names it shows
 * @property {string} icon
 */

/**
 * @typedef {object} CallInfo what a row knows of its call (updated as the call goes on)
 * @property {string} name the tool's name as the model called it
 * @property {string} args its raw JSON arguments
 * @property {string | null} result the tool's answer, null while none came
 * @property {string | null} status the external call's status (`session.tool_call`)
 */

/** @type {WeakMap<Element, CallInfo>} */
const CALLS = new WeakMap();

/** @param {string} raw @returns {Record<string, any>} */
function parseArgs(raw) {
  if (!raw) return {};
  try {
    const parsed = JSON.parse(raw);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/**
 * The subtask a plan tool's result names ("Subtask 2 ('Book transport') is done."), as the
 * tool saw it: its 0-based index and name.
 * @param {string | null} result
 * @returns {{index: number, name: string} | null}
 */
export function subtaskInResult(result) {
  const first = (result || "").split("\n", 1)[0];
  const match = /\bsubtask (\d+) \('(.*)'\)/i.exec(first);
  return match ? { index: Number(match[1]), name: match[2] } : null;
}

/**
 * "#3 Book transport": numbered from 1; the name from the tool's result, else the call's
 * arguments, else the plan the page shows.
 * @param {number | null} index 0-based, as the model counts
 * @param {string} name
 * @param {import("./types.js").PlanSnapshot | null} plan
 */
function subtaskLabel(index, name, plan) {
  let shown = name;
  if (!shown && plan && typeof index === "number") {
    const found = plan.subtasks.find((subtask) => subtask.index === index);
    if (found) shown = found.name;
  }
  if (typeof index !== "number" || Number.isNaN(index)) return shown || t("act_a_subtask");
  return shown ? `#${index + 1} ${shown}` : `#${index + 1}`;
}

/**
 * The line of one call, in people's words.
 * @param {CallInfo} call
 * @param {import("./types.js").PlanSnapshot | null} [plan] the plan the page shows, for names
 * @returns {Activity}
 */
export function describeCall(call, plan = null) {
  const args = parseArgs(call.args);
  const named = subtaskInResult(call.result);
  const index = named ? named.index : typeof args.subtask_idx === "number" ? args.subtask_idx : null;
  const given = args.subtask && typeof args.subtask === "object" ? args.subtask : {};
  const subtask = () => subtaskLabel(index, named ? named.name : String(given.name || ""), plan);
  switch (call.name) {
    case "create_plan":
      return { key: "act_created_plan", params: { name: String(args.name || "") }, icon: "flag" };
    case "update_plan_info":
      return { key: "act_updated_plan", params: {}, icon: "edit" };
    case "revise_current_plan":
      if (args.action === "add") {
        const added = /^Added subtask (\d+) \('(.*)'\)/.exec(call.result || "");
        const label = added
          ? subtaskLabel(Number(added[1]), added[2], null)
          : subtaskLabel(index, String(given.name || ""), null);
        return { key: "act_added", params: { subtask: label }, icon: "plus" };
      }
      if (args.action === "delete") {
        return { key: "act_dropped", params: { subtask: subtask() }, icon: "trash" };
      }
      if (given.name) {
        // A rename: the old name from the result, the new one from the call.
        return {
          key: "act_renamed",
          params: { subtask: subtask(), name: String(given.name) },
          icon: "edit",
        };
      }
      return { key: "act_revised", params: { subtask: subtask() }, icon: "edit" };
    case "update_subtask_state": {
      const key =
        args.state === "in_progress"
          ? "act_started"
          : args.state === "abandoned"
            ? "act_abandoned"
            : "act_reopened";
      return { key, params: { subtask: subtask() }, icon: "play" };
    }
    case "finish_subtask":
      return { key: "act_finished", params: { subtask: subtask() }, icon: "check" };
    case "finish_plan":
      return {
        key: args.state === "abandoned" ? "act_abandoned_plan" : "act_finished_plan",
        params: {},
        icon: "flag",
      };
    case "view_subtasks":
    case "get_subtask_count":
      return { key: "act_looked_plan", params: {}, icon: "sparkle" };
    case "view_historical_plans":
      return { key: "act_looked_history", params: {}, icon: "sparkle" };
    case "recover_historical_plan":
      return { key: "act_recovered_plan", params: {}, icon: "undo" };
    default:
      return describeExternal(call, args);
  }
}

/**
 * @param {CallInfo} call
 * @param {Record<string, any>} args
 * @returns {Activity}
 */
function describeExternal(call, args) {
  const cut = call.name.indexOf(SEPARATOR);
  const toolset = cut > 0 ? call.name.slice(0, cut) : "";
  const tool = cut > 0 ? call.name.slice(cut + SEPARATOR.length) : call.name;
  if (toolset === WORKSPACE) {
    const file = String(args.path || "");
    const verbs = {
      write_file: "act_wrote",
      read_file: "act_read",
      delete_file: "act_deleted_file",
      list_files: "act_listed_files",
    };
    if (Object.prototype.hasOwnProperty.call(verbs, tool) && (file || tool === "list_files")) {
      return { key: verbs[tool], params: { file }, icon: "paperclip" };
    }
  }
  const shown = toolset ? `${toolset} → ${tool}` : tool;
  // What the call is doing now, by its status; once it has ended, that it ran.
  /** @type {Record<string, string>} */
  const now = {
    pending: "act_asked",
    denied: "act_denied",
    input: "act_input",
    running: "act_running",
  };
  const key =
    now[call.status] ??
    (call.result === null && call.status === "approved" ? "act_approved" : "act_ran");
  return { key, params: { tool: shown }, icon: "tool" };
}

/**
 * A line's template with its names emphasised, every piece as text.
 * @param {Activity} activity
 * @returns {Node[]}
 */
export function activityNodes(activity) {
  const template = t(activity.key);
  /** @type {Node[]} */
  const nodes = [];
  let at = 0;
  for (const match of template.matchAll(/\{(\w+)\}/g)) {
    const name = match[1];
    if (!Object.prototype.hasOwnProperty.call(activity.params, name)) continue;
    const start = match.index ?? 0;
    if (start > at) nodes.push(document.createTextNode(template.slice(at, start)));
    nodes.push(h("em", { class: "act-name", text: activity.params[name] }));
    at = start + match[0].length;
  }
  if (at < template.length) nodes.push(document.createTextNode(template.slice(at)));
  return nodes;
}

/** Whether a result reads as a failure (plan tools and the loop start it with "Error"). */
function failed(result) {
  return typeof result === "string" && result.startsWith("Error");
}

/**
 * One call, folded: its activity line; the raw call and result on demand. Keeps the classes
 * other code and tests find rows by (`tool-row`, `tool-name`, `tool-result`, `tool-status`).
 * @param {string} name
 * @param {string} [rawArgs]
 * @param {import("./types.js").PlanSnapshot | null} [plan]
 */
export function activityRow(name, rawArgs = "", plan = null) {
  const row = h(
    "details",
    { class: "tool-row activity tool-pending" },
    h("summary", {}, h("span", { class: "act-icon" }), h("span", { class: "act-text" })),
    h(
      "div",
      { class: "tool-body" },
      h("p", { class: "tool-call" }, h("code", { class: "tool-name", text: name })),
      rawArgs ? h("pre", { class: "tool-pre tool-args-full", text: prettyJson(rawArgs) }) : null,
      h("pre", { class: "tool-pre tool-result", hidden: true }),
    ),
  );
  CALLS.set(row, { name, args: rawArgs, result: null, status: null });
  renderLine(row, plan);
  return row;
}

/**
 * The tool's answer came: the line says what was done; the full text is behind the line.
 * @param {Element} row
 * @param {string} content
 * @param {import("./types.js").PlanSnapshot | null} [plan]
 */
export function fillResult(row, content, plan = null) {
  const call = CALLS.get(row);
  const text = content || "";
  if (call) call.result = text;
  row.classList.remove("tool-pending");
  row.classList.add(failed(text) ? "tool-error" : "tool-ok");
  const pre = /** @type {HTMLElement} */ (row.querySelector(".tool-result"));
  pre.textContent = text;
  pre.hidden = false;
  renderLine(row, plan);
}

/**
 * An external call's status changed (`session.tool_call`).
 * @param {Element} row
 * @param {string} status
 * @param {string} chip what the status chip says (status, duration or progress)
 * @param {import("./types.js").PlanSnapshot | null} [plan]
 */
export function setCallStatus(row, status, chip, plan = null) {
  const call = CALLS.get(row);
  if (call) call.status = status;
  /** @type {HTMLElement} */ (row).dataset.callStatus = status;
  renderLine(row, plan);
  setChip(row, chip);
}

/** The small status text at the end of a line (progress, "done · 120 ms"). */
export function setChip(row, text) {
  const summary = row.querySelector("summary");
  let chip = summary.querySelector(".tool-status");
  if (!chip) {
    chip = h("span", { class: "tool-status" });
    summary.append(chip);
  }
  chip.textContent = text;
}

/**
 * (Re)writes a row's line from what it knows: after its result, a status change, or when the
 * plan it names subtasks from changed.
 * @param {Element} row
 * @param {import("./types.js").PlanSnapshot | null} [plan]
 */
export function renderLine(row, plan = null) {
  const call = CALLS.get(row);
  if (!call) return;
  const activity = describeCall(call, plan);
  const summary = row.querySelector("summary");
  summary.querySelector(".act-icon").replaceChildren(icon(activity.icon));
  const line = summary.querySelector(".act-text");
  line.replaceChildren(...activityNodes(activity));
  /** @type {HTMLElement} */ (summary).title = line.textContent || "";
  // Its state, in words, for those who do not see the colour.
  let state = "";
  if (call.result === null && !call.status) state = t("act_working");
  else if (failed(call.result)) state = t("act_failed");
  let mark = summary.querySelector(".act-state");
  if (!state) {
    mark?.remove();
    return;
  }
  if (!mark) {
    mark = h("span", { class: "act-state" });
    line.after(mark);
  }
  mark.textContent = state;
}

/** @param {string} raw */
function prettyJson(raw) {
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}
