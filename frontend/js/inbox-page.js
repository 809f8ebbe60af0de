// The inbox page: everything waiting on the signed-in person, with its actions inline.
// Items come from GET /api/inbox/ (embedded first, then refetched by the live feed); every
// action goes through the endpoint that owns that decision. Text from sessions, tools and
// the agent is only ever set as text.

import { setUpAnswerConsent } from "./answer-consent.js";
import { api, ApiError } from "./api.js";
import { askText } from "./dialog.js";
import { h, replaceChildren } from "./dom.js";
import { elicitationCard } from "./elicitation-form.js";
import { formatTokens, formatUsd } from "./format.js";
import { formatWhen, loadStrings, t } from "./i18n.js";
import { refreshInbox } from "./inbox-feed.js";
import { HiddenNote } from "./inbox-undo.js";
import { setUpNotifySettings } from "./notify-settings.js";
import { toast } from "./toast.js";

const SNOOZE_MINUTES = 60;

/** @typedef {Record<string, any>} Item */

class InboxPage {
  /** @param {HTMLElement} root @param {Item[]} items */
  constructor(root, items) {
    this.root = root;
    this.items = items;
    // A tool question's form, kept across re-renders so what someone is typing survives a
    // refetch of the list (by item key).
    /** @type {Map<string, HTMLElement>} */
    this.forms = new Map();
    /** @type {HiddenNote | null} the "Hidden until … Undo" line of the item just set aside */
    this.hiddenNote = null;
    /** @type {string | null} the item whose "Not now" gets the focus at the next render */
    this.refocus = null;
    /** @type {HTMLInputElement} */
    this.showSnoozed = /** @type {HTMLInputElement} */ (document.getElementById("show-snoozed"));
    this.showSnoozed.addEventListener("change", () => this.render());
    document.addEventListener("pb-inbox", (event) => {
      const items = /** @type {CustomEvent} */ (event).detail.results;
      // The same list again (the socket's hello on every connect): the page stays as it is,
      // with what someone is selecting or reading where it was.
      if (JSON.stringify(items) === JSON.stringify(this.items)) return;
      this.items = items;
      this.render();
    });
    this.render();
  }

  render() {
    const keys = new Set(this.items.map((item) => item.key));
    for (const key of [...this.forms.keys()]) if (!keys.has(key)) this.forms.delete(key);
    const note = this.hiddenNote && keys.has(this.hiddenNote.key) ? this.hiddenNote : null;
    if (this.hiddenNote && !note) this.dropNote(); // decided meanwhile: nothing to undo
    const shown = this.items.filter((item) => this.showSnoozed.checked || !item.snoozed_until);
    if (shown.length === 0 && !note) {
      replaceChildren(this.root, h("p", { class: "empty-panel inbox-empty", text: t("inbox_empty") }));
      return;
    }
    const focus = this.focusedAction();
    // The confirmation sits where the hidden item was.
    const rows = this.items.flatMap((item) => [
      note && note.key === item.key ? note.el : null,
      shown.includes(item) ? this.itemView(item) : null,
    ]);
    replaceChildren(
      this.root,
      this.bulkOffers(shown),
      h("ul", { class: "inbox-list" }, rows.filter(Boolean)),
    );
    // A rebuild drops the focus: it goes back to the same button of the same item, or after
    // an Undo to the item's "Not now" once the item is back.
    if (this.refocus && this.focusAction(this.refocus, "snooze")) this.refocus = null;
    else if (focus) this.focusAction(focus.key, focus.action);
  }

  /** The item key and action of the focused button, or null. */
  focusedAction() {
    const active = document.activeElement;
    if (!(active instanceof HTMLElement) || !this.root.contains(active)) return null;
    const holder = /** @type {HTMLElement | null} */ (active.closest("[data-key]"));
    const action = active.dataset.action;
    return holder && action ? { key: holder.dataset.key, action } : null;
  }

  /** Focus button `action` of item `key`; false when it is not on the page. */
  focusAction(key, action) {
    const button = /** @type {HTMLElement | null} */ (
      this.root.querySelector(`[data-key="${CSS.escape(key)}"] [data-action="${action}"]`)
    );
    if (button) button.focus();
    return Boolean(button);
  }

  /**
   * "Not now": hide the item for a while and say until when, with Undo.
   * @param {Item} item
   */
  async snooze(item) {
    const answer = await api("POST", "/api/inbox/snooze/", { key: item.key, minutes: SNOOZE_MINUTES });
    if (!answer || !answer.until) return;
    this.hiddenNote = new HiddenNote(item.key, answer.until, {
      onUndo: () => this.undoSnooze(item.key),
      onExpire: () => {
        this.dropNote();
        this.render();
      },
    });
    this.items = this.items.map((it) =>
      it.key === item.key ? { ...it, snoozed_until: answer.until } : it,
    );
    this.render();
    // The pressed button has gone with its item: the keyboard goes on to Undo.
    this.hiddenNote.undoButton.focus();
  }

  /** @param {string} key */
  async undoSnooze(key) {
    this.dropNote();
    this.refocus = key;
    await this.act(() => api("POST", "/api/inbox/snooze/", { key, minutes: 0 }));
  }

  dropNote() {
    if (this.hiddenNote) this.hiddenNote.stop();
    this.hiddenNote = null;
  }

  /** Identical tool requests (same tool, same arguments) waiting more than once. */
  bulkOffers(items) {
    /** @type {Map<string, Item[]>} */
    const groups = new Map();
    for (const item of items) {
      if (!item.tool_call || item.snoozed_until) continue;
      const same = item.tool_call.same_request;
      groups.set(same, [...(groups.get(same) || []), item]);
    }
    const offers = [...groups.values()].filter((group) => group.length > 1);
    return offers.map((group) =>
      h(
        "div",
        { class: "inbox-bulk", dataset: { same: group[0].tool_call.same_request } },
        h("span", {
          text: t("inbox_identical", { count: group.length, tool: group[0].tool_call.tool_name }),
        }),
        h("button", {
          type: "button",
          class: "btn btn-primary btn-small",
          dataset: { action: "bulk-approve" },
          text: t("inbox_approve_all", { count: group.length }),
          onclick: () =>
            this.act(() =>
              api("POST", "/api/inbox/bulk-approve/", { keys: group.map((item) => item.key) }),
            ),
        }),
      ),
    );
  }

  itemView(item) {
    const since = h("time", {
      class: "inbox-since",
      datetime: item.since || "",
      title: formatWhen(item.since, { absolute: true }),
      text: formatWhen(item.since),
    });
    return h(
      "li",
      {
        class: `inbox-item inbox-${item.kind}${item.snoozed_until ? " inbox-snoozed" : ""}`,
        dataset: { key: item.key, kind: item.kind },
      },
      h(
        "div",
        { class: "inbox-head" },
        h("span", { class: "pill inbox-kind", text: t(`inbox_kind_${item.kind}`) }),
        h("a", {
          class: "inbox-session",
          href: item.url,
          text: item.session.title || t("untitled_session"),
        }),
        item.subtask ? h("span", { class: "muted inbox-subtask", text: item.subtask.name }) : null,
        h("span", { class: "spacer" }),
        since,
      ),
      this.what(item),
      this.actions(item),
    );
  }

  what(item) {
    if (item.elicitation) {
      // Answered right here, with the same form as on the session page.
      const kept = this.forms.get(item.key);
      if (kept) return h("div", { class: "inbox-what" }, kept);
      const card = elicitationCard(item.elicitation, {
        editable: true,
        onAnswer: async (id, body) => {
          try {
            await api("POST", `/api/elicitations/${id}/answer/`, body);
          } catch (error) {
            return error instanceof Error ? error.message : String(error);
          }
          refreshInbox();
          return true;
        },
      });
      this.forms.set(item.key, card);
      return h("div", { class: "inbox-what" }, card);
    }
    if (item.tool_call) {
      return h(
        "div",
        { class: "inbox-what" },
        h("code", { class: "inbox-tool", text: item.tool_call.tool_name }),
        h("pre", { class: "tool-pre inbox-args", text: item.tool_call.arguments }),
      );
    }
    if (item.kind === "confirmation" && item.plan) {
      return h("p", { class: "inbox-what", text: t("inbox_confirm_plan", { name: item.plan.name }) });
    }
    if (item.budget) {
      const b = item.budget;
      return h("p", {
        class: "inbox-what",
        text: t("inbox_budget", {
          spent: formatUsd(b.spent_usd),
          limit: b.budget_usd === null ? "—" : formatUsd(b.budget_usd),
          tokens: formatTokens(b.spent_tokens),
          token_limit: b.budget_tokens === null ? "—" : formatTokens(b.budget_tokens),
        }),
      });
    }
    return h("p", { class: "inbox-what inbox-question", text: item.question || "" });
  }

  actions(item) {
    const sessionUrl = `/api/sessions/${item.session.id}/`;
    const button = (action, label, run, primary = false) =>
      h("button", {
        type: "button",
        class: `btn btn-small${primary ? " btn-primary" : ""}`,
        dataset: { action },
        text: label,
        onclick: () => this.act(run),
      });
    const buttons = [];
    if (item.tool_call) {
      const decide = (body) => () =>
        api(
          "POST",
          `${sessionUrl}tool-calls/${encodeURIComponent(item.tool_call.tool_call_id)}/decision/`,
          body,
        );
      buttons.push(button("approve", t("approve"), decide({ decision: "approve" }), true));
      buttons.push(button("deny", t("deny"), decide({ decision: "deny" })));
      // Offered to the session's owner (and staff), never to someone named to answer it.
      if (item.actions.includes("always_allow")) {
        buttons.push(
          button("always-allow", t("inbox_always_allow"), decide({ decision: "approve", always_allow: true })),
        );
      }
    }
    if (item.actions.includes("confirm")) {
      const go = () =>
        api("POST", `${sessionUrl}messages/`, { content: t("go_ahead_message"), intent: "confirm" });
      buttons.push(button("confirm", t("confirm_yes"), go, true));
    }
    if (item.actions.includes("raise_budget")) {
      buttons.push(
        button("raise-budget", t("inbox_raise_budget"), async () => {
          const value = await askText({
            title: t("inbox_raise_budget"),
            label: t("inbox_new_limit"),
            confirm: t("save"),
            required: true,
            initial: item.budget.budget_usd || "",
          });
          if (value === null) return null;
          const amount = Number(value);
          if (!Number.isFinite(amount) || amount < 0) throw new ApiError(400, { error: t("inbox_bad_amount") });
          return api("PATCH", sessionUrl, { budget_usd: amount });
        }, true),
      );
    }
    if (item.actions.includes("reply")) {
      buttons.push(
        button("reply", t("inbox_reply"), async () => {
          const text = await askText({
            title: t("inbox_reply"),
            message: item.question || "",
            label: t("message_label"),
            confirm: t("send"),
            required: true,
          });
          return text === null ? null : api("POST", `${sessionUrl}messages/`, { content: text });
        }),
      );
    }
    if (item.snoozed_until) {
      const unsnooze = () => api("POST", "/api/inbox/snooze/", { key: item.key, minutes: 0 });
      buttons.push(button("unsnooze", t("inbox_unsnooze"), unsnooze));
    } else {
      buttons.push(button("snooze", t("inbox_snooze"), () => this.snooze(item)));
    }
    return h("div", { class: "inbox-actions form-buttons" }, buttons);
  }

  /** Run one action; on failure say why. The list refreshes either way. */
  async act(run) {
    // Any next action ends the last "Not now"'s chance of Undo.
    if (this.hiddenNote) {
      this.dropNote();
      this.render();
    }
    try {
      await run();
    } catch (error) {
      toast(error instanceof Error ? error.message : String(error), { kind: "error" });
    }
    refreshInbox();
  }
}

loadStrings();
const page = JSON.parse(document.getElementById("pb-page").textContent);
new InboxPage(document.getElementById("inbox"), page.items);
setUpNotifySettings(document.getElementById("notify-settings"));
setUpAnswerConsent(document.getElementById("answer-consent"));
