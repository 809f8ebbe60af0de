// The card's detail panel, beside the board (over it on a phone): number, title, state, the
// description, expected outcome and outcome, the card's own history (from the plan's events)
// and the tool calls made while it was in progress (board-panel-record.js); edited in place
// with the card form of board-forms.js. Opened by a click on the card or Enter on its title
// link; Escape closes it; with `urlHash` the address remembers it (`#subtask-<id>`), so a
// link to a card opens it.

import { blockersSection } from "./board-blockers.js";
import { cardHash, cardNumber, shortCost, stateLabel } from "./board-card.js";
import { cardEditForm, focusAction } from "./board-forms.js";
import { CardRecord } from "./board-panel-record.js";
import { h, icon, replaceChildren } from "./dom.js";
import { t } from "./i18n.js";
import { markdownElement } from "./markdown.js";

/** @typedef {import("./types.js").PlanEvent} PlanEvent */
/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").SubtaskSnapshot} SubtaskSnapshot */
/** @typedef {import("./board.js").BoardView} BoardView */
/** @typedef {import("./board-panel-record.js").MessageLike} MessageLike */

const HASH = /^#subtask-(\d+)$/;

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
    /** @type {number | null} */
    this.openId = null;
    this.editing = false;
    /** "card" when the editor was opened from the card: Escape goes back there. */
    this.editOrigin = "";
    // The card's history and the tool calls made while it was in progress.
    this.record = new CardRecord(this, loadMessages);
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
    if (switched) this.record.messages = null;
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
    this.record.refreshEvents();
    this.record.refreshMessages();
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
    if (this.record.version !== this.board.plan.version) this.record.refreshEvents();
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
      blockersSection(subtask, this.board.plan, {
        editable: this.board.isEditable(),
        save: (ids) => this.board.actions.edit(this.subtask() || subtask, { blocked_by: ids }),
      }),
      section("description", subtask.description, "panel-description"),
      section("expected_outcome", subtask.expected_outcome, "panel-expected"),
      section("outcome", subtask.outcome, "panel-outcome"),
      !subtask.description && !subtask.expected_outcome && !subtask.outcome
        ? h("p", { class: "panel-muted", text: t("card_no_details") })
        : null,
      this.record.historySection(subtask),
      this.record.toolSection(subtask),
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
}
