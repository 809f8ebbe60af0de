// The session page's "who may answer" control: the owner names other people who may answer
// what the session's runs wait for (approvals, confirmations, questions), by username.

import { api } from "./api.js";
import { askText } from "./dialog.js";
import { t } from "./i18n.js";
import { toast } from "./toast.js";

/** @param {number} sessionId @param {string[]} initial */
export function setUpAnswerers(sessionId, initial) {
  /** @type {HTMLButtonElement | null} */
  const button = document.querySelector("#answerers");
  if (!button) return;
  /** @type {HTMLElement} */
  const names = button.querySelector(".answerers-names");
  let current = initial;
  const show = () => {
    names.textContent = current.length ? current.join(", ") : t("answerers_only_owner");
  };
  show();
  button.addEventListener("click", async () => {
    const text = await askText({
      title: t("answerers_title"),
      message: t("answerers_help"),
      label: t("answerers_label"),
      confirm: t("save"),
      initial: current.join(", "),
    });
    if (text === null) return;
    const usernames = text
      .split(/[\s,]+/)
      .map((name) => name.trim())
      .filter(Boolean);
    try {
      const body = await api("PUT", `/api/sessions/${sessionId}/answerers/`, { usernames });
      current = body.usernames;
      show();
    } catch (error) {
      toast(error instanceof Error ? error.message : String(error), { kind: "error" });
    }
  });
}
