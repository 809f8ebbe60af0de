// "Save as template" on the session page's board and on a plan in history: saves the plan
// shown (POST /api/templates/) and offers to open the new template.

import { api } from "./api.js";
import { loadStrings, t } from "./i18n.js";
import { toast } from "./toast.js";

/** The plan the session page shows: the current one, else the last (as the board does). */
async function shownPlanId(sessionId) {
  const session = await api("GET", `/api/sessions/${sessionId}/`);
  if (session.current_plan) return session.current_plan.id;
  const page = document.getElementById("pb-page");
  const data = page ? JSON.parse(page.textContent) : {};
  return data.last_plan ? data.last_plan.id : null;
}

/** @param {HTMLButtonElement} button */
async function save(button) {
  button.disabled = true;
  try {
    const planId = button.dataset.planId
      ? Number(button.dataset.planId)
      : await shownPlanId(button.dataset.sessionId);
    if (planId === null) throw new Error(t("template_no_plan"));
    /** @type {import("./types.js").TemplateSnapshot} */
    const template = await api("POST", "/api/templates/", { plan_id: planId });
    toast(t("template_saved", { name: template.name }), {
      actionLabel: t("template_open"),
      onAction: () => window.location.assign(`/templates/${template.id}/`),
      timeout: 8000,
    });
  } catch (error) {
    toast(t("template_not_saved", { reason: error instanceof Error ? error.message : "" }), {
      kind: "error",
    });
  } finally {
    button.disabled = false;
  }
}

loadStrings();
/** @type {NodeListOf<HTMLButtonElement>} */
const buttons = document.querySelectorAll("button[data-save-template]");
for (const button of buttons) {
  button.hidden = false;
  button.addEventListener("click", () => save(button));
}
