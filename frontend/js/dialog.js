// A small modal asking for one piece of text (an outcome), built on <dialog>.

import { h } from "./dom.js";
import { t } from "./i18n.js";

/** Resolves to the entered text, or null when cancelled. */
export function askText({ title, message = "", label, confirm, required = false, initial = "" }) {
  return new Promise((resolve) => {
    const field = h("textarea", {
      name: "text",
      rows: 3,
      required,
      maxlength: 4000,
      class: "dialog-input",
    });
    field.value = initial;
    const form = h(
      "form",
      { method: "dialog", class: "dialog-form" },
      h("h2", { class: "dialog-title", text: title }),
      message ? h("p", { class: "dialog-message", text: message }) : null,
      h("label", { class: "field" }, h("span", { class: "field-label", text: label }), field),
      dialogButtons(confirm),
    );
    const dialog = h("dialog", { class: "dialog", "aria-label": title }, form);
    field.addEventListener("keydown", (event) => {
      // Ctrl/Cmd+Enter confirms, like the other text forms on the board.
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        form.requestSubmit(form.querySelector("button[value=ok]"));
      }
    });
    dialog.addEventListener("close", () => {
      const value = dialog.returnValue === "ok" ? field.value.trim() : null;
      dialog.remove();
      resolve(value);
    });
    document.body.append(dialog);
    dialog.showModal();
    field.focus();
  });
}

/**
 * A dialog form's Cancel and confirm buttons (`value` "cancel" / "ok").
 * @param {string} confirm the confirm button's label
 */
export function dialogButtons(confirm) {
  return h(
    "div",
    { class: "dialog-buttons" },
    h("button", {
      type: "submit",
      value: "cancel",
      formnovalidate: true,
      class: "btn",
      text: t("cancel"),
    }),
    h("button", { type: "submit", value: "ok", class: "btn btn-primary", text: confirm }),
  );
}
