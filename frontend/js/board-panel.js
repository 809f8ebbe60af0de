// The card's detail panel, beside the board (over it on a phone): number, title, state, the
// description, expected outcome and outcome, the card's own history (from the plan's events)
// and the tool calls made while it was in progress; edited in place with the card form of
// board-forms.js. Opened by a click on the card or Enter on its title link; Escape closes it;
// with `urlHash` the address remembers it (`#subtask-<id>`), so a link to a card opens it.

import { allPlanEvents } from "./api.js";
import { cardHash, cardNumber, shortCost, stateLabel } from "./board-card.js";
import { cardEditForm, focusAction } from "./board-forms.js";
import { h, icon, replaceChildren } from "./dom.js";
import { formatWhen, t } from "./i18n.js";
import { markdownElement } from "./markdown.js";
import { actorLabel, describeEvent, eventDetail } from "./timeline.js";

/** @typedef {import("./types.js").PlanEvent} PlanEvent */
/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */
/** @typedef {import("./board.js").BoardView} BoardView */
/**
 * A stretch of time the card was in progress (`end` null: still is).
 * @typedef {{start: string, end: string | null}} Window
 */
/**
 * A transcript message as the REST API and the socket send it (the fields read here).
 * @typedef {{role: string, tool_name?: string | null, content?: string,
 *   created_at?: string | null}} MessageLike
 */

const HASH = /^#subtask-(\d+)$/;
// How much of a tool's answer a line of the panel shows (the chat has all of it).
const TOOL_TEXT_CHARS = 140;

export class CardPanel {
  /**
   * @param {BoardView} board
   * @param {object} options
   * @param {boolean} [options.urlHash] keep the open card in the address
   * @param {(() => Promise<MessageLike[]>) | null} [options.loadMessages] the session's
   *   transcript, for the tool calls made while a card was in progress; without it the
   *   panel shows no tool calls
   */
  constructor(board, { urlHash = false, loadMessages = null } = {}) {
    this.board = board;
    this.urlHash = urlHash;
    this.loadMessages = loadMessages;
    /** @type {number | null} */
    this.openId = null;
    this.editing = false;
    /** "card" when the editor was opened from the card: Escape goes back there. */
    this.editOrigin = "";
    /** @type {PlanEvent[]} */
    this.events = [];
    this.eventsPlan = 0;
    this.eventsVersion = 0;
    this.loadingEvents = false;
    /** @type {MessageLike[] | null} */
    this.messages = null;
    this.el = h("aside", {
      class: "card-panel",
      "aria-labelledby": "card-panel-title",
      hidden: true,
    });
    document.addEventListener("keydown", (event) => {
      if (event.key !== "Escape" || this.openId === null || event.defaultPrevented) return;
      const target = /** @type {HTMLElement} */ (event.target);
      if (target && target.closest && target.closest("dialog")) return;
      event.preventDefault();
      this.close();
    });
    if (urlHash) window.addEventListener("hashchange", () => this.followHash());
  }

  /** Open the card the address names, once the board shows a plan. */
  followHash() {
    const match = HASH.exec(window.location.hash);
    if (match) this.open(Number(match[1]), { remember: false });
    else if (this.openId !== null) this.close({ remember: false });
  }

  /**
   * @param {number} id
   * @param {{edit?: boolean, focus?: boolean, remember?: boolean, origin?: string}} [options]
   */
  open(id, { edit = false, focus = true, remember = true, origin = "" } = {}) {
    const plan = this.board.plan;
    if (!plan || !plan.subtasks.some((s) => s.id === id)) return;
    const switched = this.openId !== id;
    this.openId = id;
    if (switched) this.messages = null;
    this.editing = edit && this.board.isEditable();
    this.editOrigin = this.editing ? origin : "";
    if (remember && this.urlHash && window.location.hash !== cardHash(id)) {
      window.history.replaceState(null, "", cardHash(id));
    }
    this.board.root.classList.add("panel-open");
    // The card it shows, as on the card itself: presence marks an editor here too.
    this.el.dataset.subtaskId = String(id);
    this.el.hidden = false;
    this.render({ rebuild: true });
    this.board.markOpen(id);
    if (this.editing) {
      const field = /** @type {HTMLElement | null} */ (this.el.querySelector("input[name=name]"));
      if (field) field.focus();
    } else if (focus) {
      const title = /** @type {HTMLElement | null} */ (this.el.querySelector(".panel-title"));
      if (title) title.focus();
    }
    this.refreshEvents();
    this.refreshMessages();
  }

  /** @param {{refocus?: boolean, remember?: boolean, focusAction?: string}} [options] */
  close({ refocus = true, remember = true, focusAction: action = "" } = {}) {
    const id = this.openId;
    if (id === null) return;
    this.openId = null;
    this.editing = false;
    this.el.hidden = true;
    delete this.el.dataset.subtaskId;
    replaceChildren(this.el);
    this.board.root.classList.remove("panel-open");
    this.board.markOpen(null);
    if (remember && this.urlHash && HASH.test(window.location.hash)) {
      const { pathname, search } = window.location;
      window.history.replaceState(null, "", pathname + search);
    }
    if (refocus) this.board.focusCard(id, action);
  }

  /** The live subtask shown, or null. */
  subtask() {
    const plan = this.board.plan;
    return (plan && plan.subtasks.find((s) => s.id === this.openId)) || null;
  }

  /**
   * Follow the live plan; an open editor keeps what the person is typing.
   * @param {{rebuild?: boolean}} [options]
   */
  render({ rebuild = false } = {}) {
    if (this.openId === null) return;
    const subtask = this.subtask();
    if (!subtask) {
      replaceChildren(this.el, this.header(null), h("p", { text: t("card_gone") }));
      return;
    }
    if (this.editing && !this.board.isEditable()) this.editing = false;
    if (this.editing && !rebuild && this.el.querySelector("form.card-edit")) {
      const number = this.el.querySelector(".panel-number");
      if (number) number.textContent = cardNumber(subtask.index);
      return;
    }
    const focusedAction = this.focusedAction();
    replaceChildren(
      this.el,
      this.header(subtask),
      this.editing ? this.editor(subtask) : this.details(subtask),
    );
    if (focusedAction) focusAction(this.el, focusedAction);
    if (this.version !== this.board.plan.version) this.refreshEvents();
  }

  focusedAction() {
    const active = document.activeElement;
    if (!(active instanceof HTMLElement) || !this.el.contains(active)) return "";
    return active.dataset.action || "";
  }

  /** @param {SubtaskSnapshot | null} subtask */
  header(subtask) {
    return h(
      "header",
      { class: "panel-head" },
      subtask
        ? h("span", { class: "panel-number card-index", text: cardNumber(subtask.index) })
        : null,
      subtask
        ? h("span", {
            class: `pill pill-${subtask.state} panel-state`,
            text: stateLabel(subtask.state),
          })
        : null,
      h("span", { class: "spacer" }),
      subtask && this.board.isEditable() && !this.editing
        ? h(
            "button",
            {
              type: "button",
              class: "btn btn-small",
              dataset: { action: "panel-edit" },
              onclick: () => this.startEditing(),
            },
            icon("edit"),
            h("span", { text: t("edit") }),
          )
        : null,
      h(
        "button",
        {
          type: "button",
          class: "btn icon-btn panel-close",
          dataset: { action: "panel-close" },
          "aria-label": t("close_details"),
          title: t("close_details"),
          onclick: () => this.close(),
        },
        icon("close"),
      ),
    );
  }

  /** @param {SubtaskSnapshot} subtask */
  details(subtask) {
    const spent = this.board.marks.spentOn(subtask.id);
    const section = (key, text, className) =>
      text
        ? h(
            "section",
            { class: `panel-field ${className}` },
            h("h4", { class: "panel-label", text: t(key) }),
            markdownElement(text, "panel-text"),
          )
        : null;
    return h(
      "div",
      { class: "panel-body" },
      h("h3", {
        id: "card-panel-title",
        class: "panel-title",
        tabindex: "-1",
        text: subtask.name,
      }),
      h(
        "p",
        { class: "panel-meta" },
        subtask.agent
          ? h("span", { class: "chip chip-agent", text: `@${subtask.agent}` })
          : h("span", { class: "panel-muted", text: t("agent_profile_default") }),
        spent
          ? h("span", {
              class: "chip chip-cost",
              text: t("card_cost_help", { cost: shortCost(spent.cost, spent.tokens) }),
            })
          : null,
        this.board.marks.editMark(subtask.id),
      ),
      section("description", subtask.description, "panel-description"),
      section("expected_outcome", subtask.expected_outcome, "panel-expected"),
      section("outcome", subtask.outcome, "panel-outcome"),
      !subtask.description && !subtask.expected_outcome && !subtask.outcome
        ? h("p", { class: "panel-muted", text: t("card_no_details") })
        : null,
      this.historySection(subtask),
      this.toolSection(subtask),
    );
  }

  /** @param {SubtaskSnapshot} subtask */
  editor(subtask) {
    const form = cardEditForm({
      subtask,
      current: () => this.subtask() || subtask,
      save: (live, changed) => this.board.actions.edit(live, changed),
      close: () => this.stopEditing(),
    });
    return h(
      "div",
      { class: "panel-body" },
      h("h3", {
        id: "card-panel-title",
        class: "panel-title visually-hidden",
        text: `${t("edit")}: ${subtask.name}`,
      }),
      form,
    );
  }

  /** @param {{origin?: string}} [options] */
  startEditing({ origin = "" } = {}) {
    if (this.openId === null || !this.board.isEditable()) return;
    this.editing = true;
    this.editOrigin = origin;
    this.render({ rebuild: true });
    this.board.markOpen(this.openId);
    const field = /** @type {HTMLElement | null} */ (this.el.querySelector("input[name=name]"));
    if (field) field.focus();
  }

  /** Saved or cancelled: back to the details, or to the card the editor was opened from. */
  stopEditing() {
    if (this.editOrigin === "card") {
      this.close({ focusAction: "edit" });
      return;
    }
    this.editing = false;
    this.render({ rebuild: true });
    this.board.markOpen(this.openId);
    focusAction(this.el, "panel-edit");
  }

  // --- the card's history -------------------------------------------------------------------

  get version() {
    return this.eventsPlan === this.board.plan?.id ? this.eventsVersion : -1;
  }

  /** Fetch the plan's events the panel has not seen yet (all of them for a new plan). */
  async refreshEvents() {
    const plan = this.board.plan;
    if (!plan || this.loadingEvents || this.openId === null) return;
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
    const subtask = this.subtask();
    if (!subtask || this.editing) return;
    const history = this.el.querySelector(".panel-history");
    if (history) history.replaceWith(this.historySection(subtask));
    const tools = this.el.querySelector(".panel-tools");
    const fresh = this.toolSection(subtask);
    if (tools && fresh) tools.replaceWith(fresh);
  }

  /** @param {SubtaskSnapshot} subtask */
  historySection(subtask) {
    const plan = this.board.plan;
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
