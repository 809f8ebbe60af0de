// Short notices at the bottom of the screen, optionally with one action (e.g. Undo).

import { h } from "./dom.js";
import { t } from "./i18n.js";

let container = null;

function region() {
  if (!container || !container.isConnected) {
    container = h("div", { class: "toasts", role: "status", "aria-live": "polite" });
    document.body.append(container);
  }
  return container;
}

/**
 * Show `message`; returns {dismiss}. `onAction` runs when the action button is pressed,
 * `onTimeout` when the toast goes away by itself.
 */
export function toast(message, options = {}) {
  const { kind = "info", actionLabel, onAction, onTimeout, timeout = 5000 } = options;
  let done = false;
  const element = h("div", { class: `toast toast-${kind}` }, h("span", { text: message }));
  const dismiss = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    element.remove();
  };
  if (actionLabel) {
    element.append(
      h("button", {
        type: "button",
        class: "toast-action",
        text: actionLabel,
        onclick: () => {
          dismiss();
          if (onAction) onAction();
        },
      }),
    );
  }
  element.append(
    h("button", {
      type: "button",
      class: "toast-close",
      "aria-label": t("close"),
      text: "×",
      onclick: () => {
        const wasDone = done;
        dismiss();
        if (!wasDone && onTimeout) onTimeout();
      },
    }),
  );
  const timer = setTimeout(() => {
    const wasDone = done;
    dismiss();
    if (!wasDone && onTimeout) onTimeout();
  }, timeout);
  region().append(element);
  return { dismiss, element };
}

export function toastError(message) {
  return toast(message, { kind: "error", timeout: 8000 });
}
