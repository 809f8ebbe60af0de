// A tool call waiting for a person's decision, as a card in the chat: the tool, its
// arguments as text, a note, "always allow" (the session owner's), Approve and Deny.
// The inbox links to it as `#tool-call-<id>`.

import { h } from "./dom.js";
import { t } from "./i18n.js";

/**
 * @param {{tool_call_id: string, tool_name: string, arguments?: unknown}} record
 * @param {{editable: boolean, answerOnly?: boolean,
 *   onDecide?: import("./chat.js").ChatOptions["onDecide"]}} options
 */
export function approvalCard(record, options) {
  const args = JSON.stringify(record.arguments ?? {}, null, 2);
  const card = h(
    "div",
    {
      class: "approval",
      role: "group",
      // The inbox links here (`#tool-call-<id>`).
      id: `tool-call-${record.tool_call_id}`,
      dataset: { callId: record.tool_call_id },
    },
    h("p", { class: "approval-title", text: t("approval_title") }),
    h("code", { class: "approval-tool", text: record.tool_name }),
    h("pre", { class: "tool-pre approval-args", text: args }),
  );
  if (!options.editable) {
    card.append(h("p", { class: "approval-readonly", text: t("approval_read_only") }));
    return card;
  }
  const note = h("input", {
    name: "note",
    maxlength: 2000,
    placeholder: t("approval_note"),
    "aria-label": t("approval_note"),
  });
  const always = h("input", { type: "checkbox", name: "always_allow" });
  const decide = async (decision) => {
    for (const control of card.querySelectorAll("button, input")) control.disabled = true;
    const ok = options.onDecide
      ? await options.onDecide(record.tool_call_id, {
          decision,
          note: note.value.trim(),
          always_allow: decision === "approve" && always.checked,
        })
      : false;
    if (!ok) for (const control of card.querySelectorAll("button, input")) control.disabled = false;
  };
  card.append(note);
  // "Always allow" speaks for the session's later calls: the owner's, not an answerer's.
  if (!options.answerOnly) {
    card.append(
      h("label", { class: "approval-always" }, always, h("span", { text: t("approval_always") })),
    );
  }
  card.append(
    h(
      "div",
      { class: "form-buttons" },
      h("button", {
        type: "button",
        class: "btn btn-primary btn-small",
        dataset: { action: "approve" },
        text: t("approve"),
        onclick: () => decide("approve"),
      }),
      h("button", {
        type: "button",
        class: "btn btn-small",
        dataset: { action: "deny" },
        text: t("deny"),
        onclick: () => decide("deny"),
      }),
    ),
  );
  return card;
}
