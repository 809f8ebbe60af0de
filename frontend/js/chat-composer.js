// The chat's message box: the text (Enter sends, Shift+Enter breaks the line, never while an
// IME composes), the session's plan-mode switch (the owner's), and above it the prompts menu
// and attached resources of composer-extras.js.

import { h, icon } from "./dom.js";
import { t } from "./i18n.js";

/** @typedef {import("./chat.js").ChatOptions} ChatOptions */

export class Composer {
  /** @param {ChatOptions} options */
  constructor(options) {
    this.options = options;
    this.sending = false;
    this.input = h("textarea", {
      name: "content",
      rows: 2,
      maxlength: 20000,
      placeholder: t("message_placeholder"),
      "aria-label": t("message_label"),
    });
    this.sendButton = h(
      "button",
      { type: "submit", class: "btn btn-primary send", "aria-label": t("send"), title: t("send") },
      icon("send"),
      h("span", { class: "send-text", text: t("send") }),
    );
    this.planModeBox = h("input", {
      type: "checkbox",
      name: "plan_mode",
      checked: options.planMode !== false,
    });
    this.planModeBox.addEventListener("change", () => this.switchPlanMode());
    // Prompts and attached resources of the session's toolsets (composer-extras.js).
    this.extras = options.composerExtras ? options.composerExtras(this.input) : null;
    this.form = this.build();
  }

  build() {
    const planMode = h(
      "label",
      { class: "plan-mode-switch", title: t("plan_mode_help") },
      this.planModeBox,
      h("span", { text: t("plan_mode") }),
    );
    // How the keys work, under the box (wide screens; a phone's keyboard has its own button).
    const keys = h("p", { class: "composer-keys", id: "composer-keys", text: t("message_keys") });
    this.input.setAttribute("aria-describedby", "composer-keys");
    const form = h(
      "form",
      { class: "composer" },
      // The plan mode is the session's setting: its owner's, not an answerer's.
      this.options.answerOnly ? null : planMode,
      h("div", { class: "composer-box" }, this.input, keys),
      this.sendButton,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send();
    });
    this.input.addEventListener("keydown", (event) => {
      // Enter sends, Shift+Enter breaks the line; never while an IME is composing (Chinese).
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.send();
      }
    });
    return form;
  }

  async switchPlanMode() {
    const wanted = this.planModeBox.checked;
    this.planModeBox.disabled = true;
    const ok = this.options.onPlanMode ? await this.options.onPlanMode(wanted) : false;
    this.planModeBox.disabled = false;
    if (!ok) this.planModeBox.checked = !wanted;
  }

  /** The session's plan mode changed (here or elsewhere). */
  setPlanMode(on) {
    this.planModeBox.checked = Boolean(on);
  }

  async send() {
    const text = this.input.value.trim();
    if (!text || this.sending) return;
    this.sending = true;
    this.sendButton.disabled = true;
    try {
      const resources = this.extras ? this.extras.attached() : [];
      if (await this.options.onSend(text, resources)) {
        this.input.value = "";
        if (this.extras) this.extras.clear();
      }
    } finally {
      this.sending = false;
      this.sendButton.disabled = false;
      this.input.focus();
    }
  }
}
