// The "Schedule" control of the session page and of a template's page: the owner schedules a
// message into this session, or into a new session started from this template at each
// occurrence (cron, every N hours, every N days at a time, in their time zone), sees the next
// five due times before saving, pauses and resumes, and reads what each occurrence did (fired,
// skipped because a run was still going, missed, failed). While open, the dialog follows the
// schedules' live events ("pb-schedule", relayed by the page's socket). Server text is only
// set as text.

import { api, listOf } from "./api.js";
import { dialogButtons } from "./dialog.js";
import { h, replaceChildren } from "./dom.js";
import { formatWhen, loadStrings, t } from "./i18n.js";
import { toast } from "./toast.js";

/** @typedef {{id: number, name: string, message: string, kind: string, cron: string,
 *   every: number | null, at_time: string | null, timezone: string, enabled: boolean,
 *   paused_reason: string, max_failures: number, failures_in_a_row: number,
 *   next_due_at: string | null}} Schedule */
/** @typedef {{id: number, due_at: string, status: string, run_id: number | null,
 *   session_id: number | null, detail: string}} Occurrence */
/** What the schedules are for: `{session: id}` or `{template: id}`.
 * @typedef {{session?: number, template?: number}} Target */

const PREVIEW_DELAY_MS = 400;

/** @param {unknown} error */
function say(error) {
  toast(error instanceof Error ? error.message : String(error), { kind: "error" });
}

/** @param {Schedule} schedule */
function ruleText(schedule) {
  if (schedule.kind === "cron") return t("schedule_rule_cron", { cron: schedule.cron });
  const key = schedule.kind === "hours" ? "schedule_rule_hours" : "schedule_rule_days";
  return t(key, { every: schedule.every ?? 1, time: schedule.at_time ?? "" });
}

/** The rule fields of the form, as the API takes them. @param {HTMLFormElement} form */
function ruleOf(form) {
  const data = new FormData(form);
  const kind = String(data.get("kind"));
  /** @type {Record<string, any>} */
  const rule = { kind, timezone: String(data.get("timezone")).trim() };
  if (kind === "cron") rule.cron = String(data.get("cron")).trim();
  else {
    rule.every = Number(data.get("every"));
    rule.at_time = String(data.get("at_time") || "09:00");
  }
  return rule;
}

/** @param {string} kind @param {HTMLElement} cronField @param {HTMLElement} everyFields */
function showKind(kind, cronField, everyFields) {
  cronField.hidden = kind !== "cron";
  everyFields.hidden = kind === "cron";
}

/** @param {string} name @param {string} label @param {HTMLElement} input */
function field(name, label, input) {
  return h("label", { class: "field", dataset: { field: name } }, h("span", { class: "field-label", text: label }), input);
}

/** @param {HTMLElement} preview @param {string} text */
function showPreviewError(preview, text) {
  replaceChildren(preview, h("li", { text }));
  preview.classList.remove("schedule-preview-stale");
  preview.classList.add("schedule-preview-error");
}

/** The form for a new schedule; `onSaved` after a save. @param {Target} target */
function newScheduleForm(target, onSaved) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const kind = h(
    "select",
    { name: "kind", class: "schedule-kind" },
    h("option", { value: "days", text: t("schedule_kind_days") }),
    h("option", { value: "hours", text: t("schedule_kind_hours") }),
    h("option", { value: "cron", text: t("schedule_kind_cron") }),
  );
  const cronField = field("cron", t("schedule_cron"), h("input", { name: "cron", value: "0 9 * * 1-5", spellcheck: "false" }));
  const everyFields = h(
    "div",
    { class: "schedule-every" },
    field("every", t("schedule_every"), h("input", { name: "every", type: "number", min: 1, max: 366, value: 1 })),
    field("at_time", t("schedule_at"), h("input", { name: "at_time", type: "time", value: "09:00" })),
  );
  const preview = h("ol", { class: "schedule-preview", "aria-live": "polite" });
  const message = h("textarea", { name: "message", rows: 3, required: true, maxlength: 10000, class: "dialog-input" });
  const form = h(
    "form",
    { class: "schedule-form" },
    h("h3", { class: "schedule-subtitle", text: t("schedule_new") }),
    field("message", t("schedule_message"), message),
    h("div", { class: "schedule-rule" }, field("kind", t("schedule_repeat"), kind), cronField, everyFields),
    field("timezone", t("schedule_timezone"), h("input", { name: "timezone", value: zone, spellcheck: "false" })),
    h("p", { class: "schedule-preview-title", text: t("schedule_next_five") }),
    preview,
    h("button", { type: "submit", class: "btn btn-primary", text: t("schedule_save") }),
  );
  showKind(kind.value, cronField, everyFields);
  let timer = 0;
  let asked = 0;
  const refresh = () => {
    window.clearTimeout(timer);
    // Times of a rule no longer in the form are marked stale (kept in place: the layout
    // must not jump under a click on Save, which this blur's change event precedes).
    preview.classList.add("schedule-preview-stale");
    const mine = ++asked;
    timer = window.setTimeout(async () => {
      try {
        const body = await api("POST", "/api/schedules/preview/", ruleOf(form));
        if (mine !== asked) return;
        // A rule still being typed is answered with why it is not valid yet (200).
        if (body.error) return showPreviewError(preview, body.error);
        const times = body.occurrences.map((iso) => h("li", { text: formatWhen(iso, { absolute: true }) }));
        replaceChildren(preview, ...times);
        preview.classList.remove("schedule-preview-error", "schedule-preview-stale");
      } catch (error) {
        if (mine !== asked) return;
        showPreviewError(preview, error instanceof Error ? error.message : String(error));
      }
    }, PREVIEW_DELAY_MS);
  };
  kind.addEventListener("change", () => showKind(kind.value, cronField, everyFields));
  form.addEventListener("input", (event) => {
    if (event.target !== message) refresh();
  });
  form.addEventListener("change", refresh);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const goal = target.template ? { template_id: target.template } : { session_id: target.session };
      await api("POST", "/api/schedules/", { ...goal, message: message.value, ...ruleOf(form) });
      message.value = "";
      onSaved();
    } catch (error) {
      say(error);
    }
  });
  refresh();
  return form;
}

/** One occurrence as a line; `withSession`: link the session it started.
 * @param {Occurrence} row @param {boolean} withSession */
function occurrenceLine(row, withSession) {
  return h(
    "li",
    { class: "schedule-occurrence", dataset: { status: row.status } },
    h("span", { class: "schedule-occurrence-status", text: t(`schedule_status_${row.status}`) }),
    " ",
    h("time", { datetime: row.due_at, text: formatWhen(row.due_at, { absolute: true }) }),
    row.detail ? h("span", { class: "schedule-occurrence-detail", text: ` — ${row.detail}` }) : null,
    withSession && row.session_id
      ? h("a", { class: "schedule-occurrence-session", href: `/sessions/${row.session_id}/`, text: t("schedule_open_session") })
      : null,
  );
}

/** A saved schedule with its actions and record. @param {Schedule} schedule
 * @param {() => void} onChange @param {boolean} withSession */
function scheduleCard(schedule, onChange, withSession) {
  const occurrences = h("ul", { class: "schedule-occurrences" });
  const act = (method, path) => async () => {
    try {
      await api(method, `/api/schedules/${schedule.id}/${path}`);
      onChange();
    } catch (error) {
      say(error);
    }
  };
  const state = schedule.enabled
    ? t("schedule_next", { when: schedule.next_due_at ? formatWhen(schedule.next_due_at, { absolute: true }) : "—" })
    : schedule.paused_reason === "failures"
      ? t("schedule_paused_failures", { count: schedule.failures_in_a_row })
      : t("schedule_paused");
  const card = h(
    "li",
    { class: "schedule-card", dataset: { scheduleId: String(schedule.id), enabled: String(schedule.enabled) } },
    h("div", { class: "schedule-card-head" }, h("strong", { class: "schedule-name", text: schedule.name }), h("span", { class: "schedule-rule-text", text: `${ruleText(schedule)} · ${schedule.timezone}` })),
    h("p", { class: "schedule-state", text: state }),
    h(
      "div",
      { class: "schedule-actions" },
      schedule.enabled
        ? h("button", { type: "button", class: "btn btn-small", text: t("schedule_pause"), onclick: act("POST", "pause/") })
        : h("button", { type: "button", class: "btn btn-small", text: t("schedule_resume"), onclick: act("POST", "resume/") }),
      h("button", { type: "button", class: "btn btn-small btn-ghost", text: t("schedule_delete"), onclick: act("DELETE", "") }),
    ),
    occurrences,
  );
  api("GET", `/api/schedules/${schedule.id}/occurrences/`)
    .then((rows) => {
      const shown = listOf(rows)
        .slice(0, 10)
        .map((row) => occurrenceLine(row, withSession));
      replaceChildren(occurrences, ...(shown.length ? shown : [h("li", { class: "schedule-empty", text: t("schedule_no_occurrences") })]));
    })
    .catch(say);
  return card;
}

/** Whether a live event is about one of `target`'s schedules. @param {Target} target
 * @param {Record<string, any>} message */
function concerns(target, message) {
  if (target.session) return message.type === "session.schedule" && message.session_id === target.session;
  return message.type === "schedule.changed" && message.template_id === target.template;
}

/** @param {Target} target */
export function setUpSchedules(target) {
  /** @type {HTMLButtonElement | null} */
  const button = document.querySelector("#schedules");
  if (!button) return;
  // Shown once the script can run it (the template page renders it hidden).
  button.hidden = false;
  const forTemplate = Boolean(target.template);
  const count = button.querySelector(".schedules-count");
  const list = h("ul", { class: "schedule-list" });
  const title = t(forTemplate ? "schedule_title_template" : "schedule_title");
  /** @type {HTMLDialogElement} */
  const dialog = h("dialog", { class: "dialog schedule-dialog", "aria-label": title });
  const query = forTemplate ? `template=${target.template}` : `session=${target.session}`;
  const load = async () => {
    try {
      /** @type {Schedule[]} */
      const schedules = listOf(await api("GET", `/api/schedules/?${query}`));
      const running = schedules.filter((s) => s.enabled).length;
      count.textContent = schedules.length ? t("schedule_count", { running, total: schedules.length }) : t("schedule_none");
      replaceChildren(list, ...schedules.map((s) => scheduleCard(s, load, forTemplate)));
    } catch (error) {
      say(error);
    }
  };
  const close = dialogButtons(t("schedule_close"));
  close.querySelector("button[value=cancel]")?.remove();
  dialog.append(
    h(
      "form",
      { method: "dialog", class: "dialog-form" },
      h("h2", { class: "dialog-title", text: title }),
      h("p", { class: "dialog-message", text: t(forTemplate ? "schedule_help_template" : "schedule_help") }),
      list,
    ),
    newScheduleForm(target, load),
    h("form", { method: "dialog", class: "dialog-form" }, close),
  );
  // In the page only while open, like the other dialogs: pages and tests look for "the" dialog.
  dialog.addEventListener("close", () => dialog.remove());
  button.addEventListener("click", () => {
    load();
    document.body.append(dialog);
    dialog.showModal();
  });
  // A schedule made, changed, fired or settled elsewhere (another tab, the sweep) shows at once
  // while the dialog is open; the button's count follows on the next open otherwise.
  document.addEventListener("pb-schedule", (event) => {
    const message = /** @type {CustomEvent} */ (event).detail;
    if (dialog.open && message && concerns(target, message)) load();
  });
  load();
}

const pageData = document.getElementById("pb-page");
if (pageData) {
  loadStrings();
  const page = JSON.parse(pageData.textContent || "{}");
  // Only the owner schedules into a session: each occurrence posts in their name.
  const owner = page.session?.owner_id ?? page.session?.owner?.id;
  if (page.session && page.me && owner === page.me.id) setUpSchedules({ session: page.session.id });
  // Whoever may start sessions from a template schedules it (the sessions are theirs).
  else if (page.template && page.me) setUpSchedules({ template: page.template.id });
}
