// "Not now" confirms itself: where the item was, a polite status line says until when it is
// hidden, with an Undo button that shows it again (POST /api/inbox/snooze/ with minutes 0).
// The line goes by itself after a few seconds (not while the keyboard is on it) or at the
// person's next action.

import { h } from "./dom.js";
import { pageLanguage, t } from "./i18n.js";

// How long the confirmation stays (more while it has the focus).
export const UNDO_MS = 8000;

/** "16:40": when a hidden item comes back, in the page's language. @param {string} iso */
export function clockTime(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return date.toLocaleTimeString(pageLanguage(), { hour: "numeric", minute: "2-digit" });
}

export class HiddenNote {
  /**
   * @param {string} key the inbox item hidden
   * @param {string} until when it comes back (ISO 8601)
   * @param {{onUndo: () => void, onExpire: () => void}} hooks
   */
  constructor(key, until, { onUndo, onExpire }) {
    this.key = key;
    this.onExpire = onExpire;
    this.undoButton = h("button", {
      type: "button",
      class: "btn btn-small",
      dataset: { action: "undo-snooze" },
      text: t("undo"),
      onclick: () => onUndo(),
    });
    // A list item (the list stays a list), its words and button a status region.
    this.el = h(
      "li",
      { class: "inbox-undo", dataset: { key } },
      h(
        "div",
        { class: "inbox-undo-line", role: "status" },
        h("span", { text: t("inbox_hidden_until", { time: clockTime(until) }) }),
        this.undoButton,
      ),
    );
    this.arm();
  }

  /** Leave after a while, unless the keyboard is on the line then: wait again. */
  arm() {
    this.timer = window.setTimeout(() => {
      if (this.el.contains(document.activeElement)) this.arm();
      else this.onExpire();
    }, UNDO_MS);
  }

  stop() {
    clearTimeout(this.timer);
  }
}
