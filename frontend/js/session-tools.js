// The session page's "Tools" control: the owner picks which toolsets the agent may use in
// this session, and connects the toolsets that act as each person (an account through OAuth,
// or their own key). Toolset names and titles come from staff and servers: text only.

import { api, listOf } from "./api.js";
import { askText } from "./dialog.js";
import { h, icon } from "./dom.js";
import { t } from "./i18n.js";
import { toast } from "./toast.js";

/**
 * @typedef {{id: number, name: string, title: string, kind: string, enabled: boolean,
 *   access: string, auth: string, connected: boolean, tools: {name: string}[]}} Toolset
 */

/** @param {number} sessionId @param {number[]} initial @returns {(ids: number[]) => void} */
export function setUpSessionTools(sessionId, initial) {
  /** @type {HTMLButtonElement | null} */
  const button = document.querySelector("#session-tools");
  if (!button) return () => {};
  /** @type {HTMLElement} */
  const count = button.querySelector(".session-tools-count");
  let chosen = initial;
  const show = () => {
    count.textContent = String(chosen.length);
  };
  show();
  button.addEventListener("click", async () => {
    /** @type {Toolset[]} */
    let toolsets;
    try {
      toolsets = listOf(await api("GET", "/api/toolsets/")).filter((item) => item.enabled);
    } catch (error) {
      toast(error instanceof Error ? error.message : String(error), { kind: "error" });
      return;
    }
    const picked = await pickToolsets(sessionId, toolsets, chosen);
    if (picked === null) return;
    try {
      const body = await api("PATCH", `/api/sessions/${sessionId}/`, { toolsets: picked });
      chosen = body.toolsets ?? picked;
      show();
      toast(t("tools_saved"));
    } catch (error) {
      toast(error instanceof Error ? error.message : String(error), { kind: "error" });
    }
  });
  // Another tab (or an admin) changed the choice: the live event carries it.
  return (ids) => {
    chosen = ids;
    show();
  };
}

/** Resolves to the chosen toolset ids, or null when cancelled. */
function pickToolsets(
  /** @type {number} */ sessionId,
  /** @type {Toolset[]} */ toolsets,
  /** @type {number[]} */ chosen,
) {
  return new Promise((resolve) => {
    const rows = toolsets.map((toolset) => toolsetRow(sessionId, toolset, chosen));
    const form = h(
      "form",
      { method: "dialog", class: "dialog-form session-tools-form" },
      h("h2", { class: "dialog-title", text: t("tools_title") }),
      h("p", { class: "dialog-message", text: t("tools_help") }),
      rows.length
        ? h("ul", { class: "session-tools-list" }, rows)
        : h("p", { class: "empty", text: t("tools_none") }),
      h(
        "div",
        { class: "dialog-buttons" },
        h("button", { type: "submit", value: "cancel", class: "btn", text: t("cancel") }),
        h("button", { type: "submit", value: "ok", class: "btn btn-primary", text: t("save") }),
      ),
    );
    const dialog = h("dialog", { class: "dialog", "aria-label": t("tools_title") }, form);
    dialog.addEventListener("close", () => {
      const ids =
        dialog.returnValue === "ok"
          ? [...form.querySelectorAll("input[name=toolset]:checked")].map((box) =>
              Number(/** @type {HTMLInputElement} */ (box).value),
            )
          : null;
      dialog.remove();
      resolve(ids);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

function toolsetRow(
  /** @type {number} */ sessionId,
  /** @type {Toolset} */ toolset,
  /** @type {number[]} */ chosen,
) {
  const label = toolset.title || toolset.name;
  const count = toolset.tools.length;
  return h(
    "li",
    { class: "session-tools-row", dataset: { toolset: toolset.name } },
    h(
      "label",
      { class: "session-tools-pick" },
      h("input", {
        type: "checkbox",
        name: "toolset",
        value: String(toolset.id),
        checked: chosen.includes(toolset.id),
      }),
      icon("tool"),
      h("span", { class: "session-tools-name", text: label }),
      h("span", { class: "session-tools-meta", text: t("tools_count", { count }) }),
    ),
    connection(sessionId, toolset),
  );
}

/** Whose account the toolset acts as, and how to connect it when that is the person's to do. */
function connection(/** @type {number} */ sessionId, /** @type {Toolset} */ toolset) {
  if (toolset.access !== "per_person") {
    if (toolset.auth === "oauth" && !toolset.connected) {
      return h("span", { class: "badge badge-warn", text: t("tools_shared_not_connected") });
    }
    return h("span", { class: "badge", text: t("tools_shared") });
  }
  const state = h("span", {
    class: toolset.connected ? "badge badge-ok" : "badge badge-warn",
    text: toolset.connected ? t("tools_connected") : t("tools_not_connected"),
  });
  if (toolset.auth === "oauth") {
    const back = `/sessions/${sessionId}/`;
    const href = `/toolsets/${toolset.id}/connect/?next=${encodeURIComponent(back)}`;
    return h(
      "span",
      { class: "session-tools-connect" },
      state,
      h("a", {
        class: "btn btn-small",
        href,
        text: toolset.connected ? t("tools_reconnect") : t("tools_connect"),
      }),
    );
  }
  const setKey = h("button", {
    type: "button",
    class: "btn btn-small",
    text: t("tools_set_key"),
    onclick: async () => {
      const values = await askKeys(toolset);
      if (values === null) return;
      const field = toolset.kind === "stdio" ? "env" : "headers";
      try {
        await api("PUT", `/api/toolsets/${toolset.id}/credential/`, { [field]: values });
        state.className = "badge badge-ok";
        state.textContent = t("tools_connected");
        toast(t("tools_key_saved", { name: toolset.title || toolset.name }));
      } catch (error) {
        toast(error instanceof Error ? error.message : String(error), { kind: "error" });
      }
    },
  });
  return h("span", { class: "session-tools-connect" }, state, setKey);
}

/** "NAME=value" lines → {NAME: value}; null when cancelled or nothing was given. */
async function askKeys(/** @type {Toolset} */ toolset) {
  const text = await askText({
    title: t("tools_set_key_title", { name: toolset.title || toolset.name }),
    message: toolset.kind === "stdio" ? t("tools_set_key_env") : t("tools_set_key_headers"),
    label: t("tools_set_key_label"),
    confirm: t("save"),
    required: true,
  });
  if (text === null) return null;
  /** @type {Record<string, string>} */
  const values = {};
  // Environment variables are NAME=value, headers Name: value (a value may hold either sign).
  const separator = toolset.kind === "stdio" ? "=" : ":";
  for (const line of text.split("\n")) {
    const at = line.indexOf(separator);
    if (at > 0) values[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  if (!Object.keys(values).length) {
    toast(t("tools_set_key_empty"), { kind: "error" });
    return null;
  }
  return values;
}
