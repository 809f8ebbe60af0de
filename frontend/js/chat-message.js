// One transcript message as the chat shows it: a person's words as plain text, the agent's
// answers as markdown with their tool calls as activity lines (chat-activity.js), a tool's
// answer filled into its call's line, an attached resource folded; "seen by the agent" under
// a person's message once a step read it.

import { activityRow, fillResult } from "./chat-activity.js";
import { h, icon } from "./dom.js";
import { formatTime, formatWhen, t } from "./i18n.js";
import { markdownElement } from "./markdown.js";

/**
 * The message's element, or null when it only completes an activity line already shown.
 * @param {Record<string, any>} message
 * @param {import("./types.js").PlanSnapshot | null} plan names the subtasks lines mention
 * @param {Map<string, HTMLElement>} callRows the activity line of each tool call id
 */
export function renderMessage(message, plan, callRows) {
  if (message.role === "tool") {
    const row = message.tool_call_id ? callRows.get(message.tool_call_id) : null;
    if (row) {
      fillResult(row, message.content, plan);
      return null;
    }
    const standalone = activityRow(message.tool_name || t("tool"), "", plan);
    fillResult(standalone, message.content, plan);
    return h("li", { class: "msg msg-tool", dataset: { id: message.id } }, standalone);
  }
  if (message.attachment) return attachmentRow(message);
  const isUser = message.role === "user";
  const who = isUser ? message.author || t("you") : t("agent");
  const dataset = { id: message.id };
  if (message.answer_id) dataset.answerId = message.answer_id;
  const element = h(
    "li",
    { class: `msg msg-${isUser ? "user" : "assistant"}`, dataset },
    h(
      "div",
      { class: "msg-meta" },
      h("span", { class: "msg-author", text: who }),
      h("time", {
        datetime: message.created_at || "",
        title: formatWhen(message.created_at, { absolute: true }),
        text: formatTime(message.created_at),
      }),
    ),
  );
  if (message.content) {
    // People's words stay plain text; the agent's answers are markdown.
    element.append(
      isUser
        ? h("div", { class: "bubble", text: message.content })
        : markdownElement(message.content, "bubble"),
    );
  }
  if (isUser && message.seen) element.append(seenMark(message.seen));
  if (message.attachments && message.attachments.length) {
    element.append(
      h(
        "ul",
        { class: "msg-attachments", "aria-label": t("attached") },
        message.attachments.map((/** @type {any} */ item) =>
          h(
            "li",
            { class: "chip", title: item.uri },
            icon("paperclip"),
            h("span", { text: `${item.toolset}: ${item.name || item.uri}` }),
          ),
        ),
      ),
    );
  }
  // The step's tool work: one plain line per call, the raw call behind each.
  const calls = message.tool_calls || [];
  if (calls.length) {
    const group = h("div", { class: "activity-group" });
    for (const call of calls) {
      const fn = call.function || {};
      const row = activityRow(fn.name || t("tool"), fn.arguments || "", plan);
      if (call.id) callRows.set(call.id, row);
      group.append(row);
    }
    element.append(group);
  }
  return element;
}

/** A resource a person attached, as the run read it from its server: folded, text only. */
function attachmentRow(message) {
  const item = message.attachment;
  const label = item.ok ? "attachment_read" : "attachment_unread";
  return h(
    "li",
    { class: "msg msg-attachment", dataset: { id: message.id } },
    h(
      "details",
      { class: "tool-row" },
      h(
        "summary",
        {},
        icon("paperclip"),
        h("span", {
          class: "tool-name",
          text: t(label, { toolset: item.toolset, name: item.name || item.uri }),
        }),
      ),
      h("div", { class: "tool-body" }, h("pre", { class: "tool-pre", text: message.content })),
    ),
  );
}

/**
 * "Seen by the agent" under a person's message, the step that read it on hover.
 * @param {{step: number | null}} seen
 */
export function seenMark(seen) {
  return h(
    "span",
    {
      class: "msg-seen",
      title: seen.step ? t("msg_seen_help", { step: seen.step }) : null,
    },
    icon("check"),
    h("span", { text: t("msg_seen") }),
  );
}

/** Consecutive agent messages read as one turn: only the first shows "Agent · time". */
export function markContinuation(element) {
  let previous = element.previousElementSibling;
  while (previous && previous.classList.contains("msg-working")) {
    previous = previous.previousElementSibling;
  }
  const agentSide = (el) =>
    el && (el.classList.contains("msg-assistant") || el.classList.contains("msg-tool"));
  element.classList.toggle("msg-continued", Boolean(agentSide(element) && agentSide(previous)));
}
