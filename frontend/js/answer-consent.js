// The inbox page's consent to being named an answerer: anyone, teammates, or nobody.
// GET/PUT /api/inbox/answering/.

import { api } from "./api.js";
import { t } from "./i18n.js";
import { toast } from "./toast.js";

const URL = "/api/inbox/answering/";

/** @param {HTMLElement | null} root the consent's <details> */
export async function setUpAnswerConsent(root) {
  if (!root) return;
  const form = /** @type {HTMLFormElement} */ (root.querySelector("form"));
  const fill = (/** @type {{named_by: string}} */ data) => {
    for (const box of form.querySelectorAll("input[name=named_by]")) {
      const input = /** @type {HTMLInputElement} */ (box);
      input.checked = input.value === data.named_by;
    }
  };
  try {
    fill(await api("GET", URL));
  } catch {
    return;
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = /** @type {HTMLInputElement | null} */ (
      form.querySelector("input[name=named_by]:checked")
    );
    if (!chosen) return;
    try {
      fill(await api("PUT", URL, { named_by: chosen.value }));
      toast(t("consent_saved"));
    } catch (error) {
      toast(error instanceof Error ? error.message : String(error), { kind: "error" });
    }
  });
}
