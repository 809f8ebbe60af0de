// The card's record in its detail panel: its own history, from the plan's events (fetched
// once per plan and then only what is new), and the tool calls made while it was in
// progress, read from the session's transcript. Tool output is set as text, clipped.

import { allPlanEvents } from "./api.js";
import { h } from "./dom.js";
import { formatWhen, t } from "./i18n.js";
import { actorLabel, describeEvent, eventDetail } from "./timeline.js";

/** @typedef {import("./types.js").PlanEvent} PlanEvent */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */
/** @typedef {import("./board-panel.js").CardPanel} CardPanel */
/**
 * A stretch of time the card was in progress (`end` null: still is).
 * @typedef {{start: string, end: string | null}} Window
 */
/**
 * A transcript message as the REST API and the socket send it (the fields read here).
 * @typedef {{role: string, tool_name?: string | null, content?: string,
 *   created_at?: string | null}} MessageLike
 */

// How much of a tool's answer a line of the panel shows (the chat has all of it).
const TOOL_TEXT_CHARS = 140;

export class CardRecord {
  /**
   * @param {CardPanel} panel
   * @param {(() => Promise<MessageLike[]>) | null} loadMessages the session's transcript;
   *   without it the panel shows no tool calls
   */
  constructor(panel, loadMessages) {
    this.panel = panel;
    this.loadMessages = loadMessages;
    /** @type {PlanEvent[]} */
    this.events = [];
    this.eventsPlan = 0;
    this.eventsVersion = 0;
    this.loadingEvents = false;
    /** @type {MessageLike[] | null} */
    this.messages = null;
  }

  /** The plan version the history is up to (-1: another plan's). */
  get version() {
    return this.eventsPlan === this.panel.board.plan?.id ? this.eventsVersion : -1;
  }

  /** Fetch the plan's events the panel has not seen yet (all of them for a new plan). */
  async refreshEvents() {
    const plan = this.panel.board.plan;
    if (!plan || this.loadingEvents || this.panel.openId === null) return;
    if (this.eventsPlan !== plan.id) {
      this.events = [];
      this.eventsVersion = 0;
      this.eventsPlan = plan.id;
    }
    if (this.eventsVersion >= plan.version) return;
    this.loadingEvents = true;
    try {
      const events = await allPlanEvents(plan.id);
      if (this.eventsPlan !== plan.id) return;
      this.events = events;
      this.eventsVersion = events.length ? events[events.length - 1].version : plan.version;
    } catch (error) {
      console.error(error); // the history is extra: the card's own fields are still shown
      this.eventsVersion = plan.version;
    } finally {
      this.loadingEvents = false;
    }
    this.renderExtras();
  }

  async refreshMessages() {
    if (!this.loadMessages || this.messages !== null) return;
    try {
      this.messages = await this.loadMessages();
    } catch (error) {
      console.error(error);
      this.messages = [];
    }
    this.renderExtras();
  }

  /** Re-render the history and tool lists in place (the editor, if open, is kept). */
  renderExtras() {
    const subtask = this.panel.subtask();
    if (!subtask || this.panel.editing) return;
    const history = this.panel.el.querySelector(".panel-history");
    if (history) history.replaceWith(this.historySection(subtask));
    const tools = this.panel.el.querySelector(".panel-tools");
    const fresh = this.toolSection(subtask);
    if (tools && fresh) tools.replaceWith(fresh);
  }

  /** @param {SubtaskSnapshot} subtask */
  historySection(subtask) {
    const plan = this.panel.board.plan;
    const mine = this.events.filter((event) => concerns(event, subtask.id));
    const list = h(
      "ol",
      { class: "panel-events" },
      mine.map((event) => {
        const detail = eventDetail(event);
        const sentence =
          event.action === "plan_created" ? t("card_created_with_plan") : describeEvent(event, plan, plan);
        return h(
          "li",
          { class: "panel-event" },
          h("span", { class: "panel-actor", text: actorLabel(event.actor) }),
          " ",
          h("span", { text: sentence }),
          event.created_at
            ? h("time", {
                class: "panel-when",
                datetime: event.created_at,
                text: formatWhen(event.created_at),
              })
            : null,
          detail ? h("span", { class: "panel-event-detail", text: detail }) : null,
        );
      }),
    );
    const loading = this.version < (plan ? plan.version : 0);
    return h(
      "section",
      { class: "panel-field panel-history" },
      h("h4", { class: "panel-label", text: t("card_history") }),
      mine.length
        ? list
        : h("p", { class: "panel-muted", text: t(loading ? "loading" : "card_no_history") }),
    );
  }

  /** @param {SubtaskSnapshot} subtask */
  toolSection(subtask) {
    if (!this.loadMessages) return null;
    const windows = progressWindows(this.events, subtask.id);
    const calls = this.messages ? toolMessagesIn(this.messages, windows) : [];
    return h(
      "section",
      { class: "panel-field panel-tools" },
      h("h4", { class: "panel-label", text: t("card_tool_calls") }),
      calls.length
        ? h(
            "ol",
            { class: "panel-events" },
            calls.map((message) =>
              h(
                "li",
                { class: "panel-event panel-tool" },
                h("span", { class: "panel-tool-name", text: message.tool_name || t("tool") }),
                " ",
                h("span", { class: "panel-tool-text", text: clip(message.content || "") }),
                message.created_at
                  ? h("time", {
                      class: "panel-when",
                      datetime: message.created_at,
                      text: formatWhen(message.created_at),
                    })
                  : null,
              ),
            ),
          )
        : h("p", {
            class: "panel-muted",
            text: t(this.messages === null ? "loading" : "card_no_tool_calls"),
          }),
    );
  }
}


/**
 * Is `event` about subtask `id` (its own change, or the plan that created it)?
 * @param {PlanEvent} event
 * @param {number} id
 */
export function concerns(event, id) {
  if (event.subtask_id === id) return true;
  if (event.action === "plan_created" || event.action === "plan_recovered") {
    return (event.patch.upsert || []).some((subtask) => subtask.id === id);
  }
  // Finishing one card may start this one (`started_next`).
  return (
    event.action === "subtask_finished" &&
    (event.patch.upsert || []).some((s) => s.id === id && s.state === "in_progress")
  );
}

/**
 * When subtask `id` was in progress, from the plan's events (oldest first).
 * @param {PlanEvent[]} events
 * @param {number} id
 * @returns {Window[]}
 */
export function progressWindows(events, id) {
  /** @type {Window[]} */
  const windows = [];
  let open = null;
  for (const event of events) {
    const mine = (event.patch.upsert || []).find((subtask) => subtask.id === id);
    const removed = (event.patch.remove || []).includes(id);
    const at = event.created_at || "";
    if (mine && mine.state === "in_progress" && open === null) open = at;
    else if ((removed || (mine && mine.state !== "in_progress")) && open !== null) {
      windows.push({ start: open, end: at });
      open = null;
    }
  }
  if (open !== null) windows.push({ start: open, end: null });
  return windows;
}

/**
 * The tool answers of the transcript that came while one of `windows` was open.
 * @param {MessageLike[]} messages
 * @param {Window[]} windows
 */
export function toolMessagesIn(messages, windows) {
  const inside = (/** @type {string} */ at) =>
    windows.some(({ start, end }) => at >= start && (end === null || at <= end));
  return messages.filter(
    (message) => message.role === "tool" && message.created_at && inside(message.created_at),
  );
}

/** @param {string} text */
function clip(text) {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > TOOL_TEXT_CHARS ? `${line.slice(0, TOOL_TEXT_CHARS - 1)}…` : line;
}
