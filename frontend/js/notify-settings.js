// The inbox page's notification settings: which kinds, email, a webhook, and the delay.
// GET/PUT /api/inbox/notifications/; a new webhook secret is shown once, as text.

import { api } from "./api.js";
import { t } from "./i18n.js";
import { toast } from "./toast.js";

const URL = "/api/inbox/notifications/";

/** @param {HTMLElement} root the settings' <details> */
export async function setUpNotifySettings(root) {
  const form = /** @type {HTMLFormElement} */ (root.querySelector("form"));
  const field = (name) => /** @type {HTMLInputElement} */ (form.elements.namedItem(name));
  /** @type {HTMLElement} */
  const secret = root.querySelector(".notify-secret");
  const fill = (data) => {
    for (const box of form.querySelectorAll("input[name=kinds]")) {
      const input = /** @type {HTMLInputElement} */ (box);
      input.checked = data.kinds.includes(input.value);
    }
    field("email").checked = data.email;
    field("webhook_url").value = data.webhook_url;
    field("delay_minutes").value = String(Math.round(data.delay_seconds / 60));
    if (data.webhook_secret) {
      secret.textContent = t("notify_secret", { secret: data.webhook_secret });
      secret.hidden = false;
    }
  };
  try {
    fill(await api("GET", URL));
  } catch {
    return;
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const kinds = [...form.querySelectorAll("input[name=kinds]:checked")].map(
      (box) => /** @type {HTMLInputElement} */ (box).value,
    );
    const body = {
      kinds,
      email: field("email").checked,
      webhook_url: field("webhook_url").value.trim(),
      delay_seconds: Math.max(0, Math.round(Number(field("delay_minutes").value || 0) * 60)),
    };
    try {
      fill(await api("PUT", URL, body));
      toast(t("notify_saved"));
    } catch (error) {
      toast(error instanceof Error ? error.message : String(error), { kind: "error" });
    }
  });
}
