// The chat: the transcript (tool activity folded into compact rows), the agent's run status
// with a Stop button, the "Start this plan?" prompt, and the message box.

import { h, icon, replaceChildren } from "./dom.js";
import { formatCost } from "./cost.js";
import { formatTime, formatWhen, t } from "./i18n.js";
import { markdownElement } from "./markdown.js";
import { elicitationCard } from "./elicitation-form.js";
import { ENDED_CALL, activityRow, fillResult, renderLine, setCallStatus, setChip } from "./chat-activity.js";

const ACTIVE_RUN = new Set(["queued", "running"]);
const FINISHED_RUN = new Set(["succeeded", "failed", "cancelled"]);
const STOPPABLE_RUN = new Set(["queued", "running", "waiting_for_user", "waiting_for_approval"]);

/**
 * @typedef {object} ChatOptions
 * @property {boolean} [editable] may this person talk to the agent
 * @property {boolean} [answerOnly] they may only answer what waits (named by the owner): the
 *   composer only while the run waits for the user; no stop button, plan mode, "always allow"
 *   and no plan-mode switch
 * @property {boolean} [transcriptOnly] no run bar and no message box (history review)
 * @property {(text: string, resources: {toolset_id: number, uri: string}[]) =>
 *   Promise<boolean>} [onSend]
 * @property {(input: HTMLTextAreaElement) =>
 *   import("./composer-extras.js").ComposerExtras} [composerExtras] the prompts menu and
 *   attached resources
 * @property {() => Promise<unknown>} [onStop]
 * @property {() => Promise<unknown>} [onGoAhead]
 * @property {() => void} [onKeepEditing]
 * @property {(on: boolean) => Promise<boolean>} [onPlanMode] the composer's plan-mode switch
 * @property {(callId: string, decision: {decision: string, note: string,
 *   always_allow: boolean}) => Promise<boolean>} [onDecide] a tool call's approval
 * @property {(id: number, body: {action: string, content?: Record<string, any>}) =>
 *   Promise<boolean | string>} [onElicitation] answering a tool's question (true: answered;
 *   text: why not)
 * @property {boolean} [planMode] whether the session plans (plan tools and hint) or just chats
 * @property {boolean} [isOwner] this person owns the session: a plan waits for *their*
 *   go-ahead (others read a neutral wording)
 */

export class ChatView {
  /**
   * @param {HTMLElement} root
   * @param {ChatOptions} [options]
   */
  constructor(root, options = {}) {
    this.root = root;
    this.options = options;
    this.editable = Boolean(options.editable) && !options.transcriptOnly;
    this.messages = new Map(); // message id -> element
    this.streams = new Map(); // answer id -> {element, text, seq}: answers being written
    this.callRows = new Map(); // tool call id -> <details> row
    this.approvals = new Map(); // tool call id -> approval card (calls waiting for a person)
    this.elicitations = new Map(); // elicitation id -> card (a tool's question to a person)
    this.run = null;
    /** @type {import("./types.js").PlanSnapshot | null} the plan shown: names activity lines */
    this.plan = null;
    this.dismissedRuns = new Set();
    this.build();
  }

  build() {
    this.root.classList.add("chat");
    if (!this.options.transcriptOnly) {
      this.runStatus = h("span", { class: "run-status", role: "status" });
      this.runDetail = h("span", { class: "run-detail" });
      // What the run spent, once it stopped (the board shows the plan's share while it runs).
      this.runUsage = h("span", { class: "run-usage" });
      this.stopButton = h(
        "button",
        { type: "button", class: "btn btn-danger btn-small", dataset: { action: "stop" } },
        icon("stop"),
        h("span", { text: t("stop") }),
      );
      this.stopButton.addEventListener("click", () => this.stop());
      this.startButton = h(
        "button",
        { type: "button", class: "btn btn-primary btn-small", dataset: { action: "start-plan" } },
        icon("play"),
        h("span", { text: t("start_plan") }),
      );
      this.startButton.addEventListener("click", () => this.goAhead());
      this.runBar = h(
        "div",
        { class: "run-bar" },
        this.runStatus,
        this.runDetail,
        this.runUsage,
        h("span", { class: "spacer" }),
        this.startButton,
        this.stopButton,
      );
      this.confirm = this.buildConfirm();
      this.root.append(this.runBar, this.confirm);
    }
    // A list (its items are list items), announced as it grows as a log would be.
    this.list = h("ol", {
      class: "messages",
      "aria-live": "polite",
      "aria-label": t("conversation"),
    });
    this.emptyNote = h("li", { class: "msg-empty", text: t("chat_empty") });
    this.list.append(this.emptyNote);
    // While a run works and nothing else shows it (no answer being written, no call running).
    this.workingLine = h(
      "li",
      { class: "msg msg-working", hidden: true },
      h("span", { class: "act-dots", "aria-hidden": "true" }),
      h("span", { text: t("act_working") }),
    );
    this.root.append(this.list);
    if (this.editable) {
      this.composer = this.buildComposer();
      if (this.extras) this.root.append(this.extras.element);
      this.answerNote = h("p", { class: "read-only-note", text: t("answer_only_chat") });
      this.answerNote.hidden = true;
      this.root.append(this.answerNote, this.composer);
    } else if (!this.options.transcriptOnly) {
      this.root.append(h("p", { class: "read-only-note", text: t("read_only_chat") }));
    }
    this.setRun(null);
  }

  buildConfirm() {
    const yes = h(
      "button",
      { type: "button", class: "btn btn-primary", dataset: { action: "go-ahead" } },
      icon("play"),
      h("span", { text: t("confirm_yes") }),
    );
    yes.addEventListener("click", () => this.goAhead());
    const keep = h("button", {
      type: "button",
      class: "btn",
      dataset: { action: "keep-editing" },
      text: t("confirm_keep_editing"),
    });
    keep.addEventListener("click", () => {
      if (this.run) this.dismissedRuns.add(this.run.id);
      this.setRun(this.run);
      if (this.options.onKeepEditing) this.options.onKeepEditing();
    });
    return h(
      "section",
      { class: "confirm", hidden: true, "aria-labelledby": "confirm-title" },
      h("h3", { id: "confirm-title", text: t("confirm_title") }),
      h("p", { text: t(this.options.isOwner ? "confirm_text" : "confirm_text_other") }),
      h("div", { class: "form-buttons" }, yes, keep),
    );
  }

  buildComposer() {
    this.input = h("textarea", {
      name: "content",
      rows: 2,
      maxlength: 20000,
      placeholder: t("message_placeholder"),
      "aria-label": t("message_label"),
    });
    this.sendButton = h(
      "button",
      { type: "submit", class: "btn btn-primary send", "aria-label": t("send"), title: t("send") },
      icon("send"),
      h("span", { class: "send-text", text: t("send") }),
    );
    this.planModeBox = h("input", {
      type: "checkbox",
      name: "plan_mode",
      checked: this.options.planMode !== false,
    });
    this.planModeBox.addEventListener("change", async () => {
      const wanted = this.planModeBox.checked;
      this.planModeBox.disabled = true;
      const ok = this.options.onPlanMode ? await this.options.onPlanMode(wanted) : false;
      this.planModeBox.disabled = false;
      if (!ok) this.planModeBox.checked = !wanted;
    });
    const planMode = h(
      "label",
      { class: "plan-mode-switch", title: t("plan_mode_help") },
      this.planModeBox,
      h("span", { text: t("plan_mode") }),
    );
    // Prompts and attached resources of the session's toolsets (composer-extras.js).
    this.extras = this.options.composerExtras ? this.options.composerExtras(this.input) : null;
    // How the keys work, under the box (wide screens; a phone's keyboard has its own button).
    const keys = h("p", { class: "composer-keys", id: "composer-keys", text: t("message_keys") });
    this.input.setAttribute("aria-describedby", "composer-keys");
    const form = h(
      "form",
      { class: "composer" },
      // The plan mode is the session's setting: its owner's, not an answerer's.
      this.options.answerOnly ? null : planMode,
      h("div", { class: "composer-box" }, this.input, keys),
      this.sendButton,
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send();
    });
    this.input.addEventListener("keydown", (event) => {
      // Enter sends, Shift+Enter breaks the line; never while an IME is composing (Chinese).
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.send();
      }
    });
    return form;
  }

  /** The session's plan mode changed (here or elsewhere). */
  setPlanMode(on) {
    if (this.planModeBox) this.planModeBox.checked = Boolean(on);
  }

  async send() {
    const text = this.input.value.trim();
    if (!text || this.sending) return;
    this.sending = true;
    this.sendButton.disabled = true;
    try {
      const resources = this.extras ? this.extras.attached() : [];
      if (await this.options.onSend(text, resources)) {
        this.input.value = "";
        if (this.extras) this.extras.clear();
      }
    } finally {
      this.sending = false;
      this.sendButton.disabled = false;
      this.input.focus();
    }
  }

  async goAhead() {
    if (this.run) this.dismissedRuns.add(this.run.id);
    this.setRun(this.run);
    if (this.options.onGoAhead) await this.options.onGoAhead();
  }

  async stop() {
    this.stopButton.disabled = true;
    try {
      await this.options.onStop();
    } finally {
      this.setRun(this.run);
    }
  }

  /**
   * The plan the board shows changed: activity lines that name subtasks only by index (a call
   * still running) take their names from it.
   * @param {import("./types.js").PlanSnapshot | null} plan
   */
  setPlan(plan) {
    this.plan = plan;
    for (const row of this.callRows.values()) renderLine(row, plan);
  }

  /** The "working…" line: at the end of the transcript while the run works unseen. */
  showWorking() {
    const active = Boolean(this.run) && this.run.status === "running" && !this.run.cancel_requested;
    const busy =
      this.streams.size > 0 || Boolean(this.list.querySelector(".tool-row.tool-pending"));
    const show = active && !busy;
    if (this.list.lastElementChild !== this.workingLine) this.list.append(this.workingLine);
    this.workingLine.hidden = !show;
  }

  // --- run status ------------------------------------------------------------------------

  /** @param {import("./types.js").RunSnapshot | null} run */
  setRun(run) {
    this.run = run;
    if (this.options.transcriptOnly) return;
    this.showWorking();
    // The inbox links to a waiting run as `#run-<id>`.
    this.runBar.id = run ? `run-${run.id}` : "";
    const status = run ? run.status : "idle";
    this.runBar.dataset.status = status;
    const stopping = Boolean(run && run.cancel_requested && ACTIVE_RUN.has(status));
    this.runStatus.className = `run-status run-${status}`;
    this.runStatus.textContent = stopping ? t("run_stopping") : t(`run_${status}`);
    if (status === "waiting_for_user" && !stopping && !this.options.isOwner) {
      this.runStatus.textContent = t("run_waiting_for_user_other");
    }
    // A tool waits on a person's answer (its question's card is in the transcript).
    if (run && status === "running" && !stopping && this.elicitations.size) {
      this.runStatus.textContent = t("run_waiting_answer");
    }
    // Waiting behind the owner's other runs (the per-user cap): say where in line it is.
    if (run && status === "queued" && !stopping && typeof run.queue_position === "number") {
      this.runStatus.textContent = t("run_queue_position", { position: run.queue_position });
    }
    let detail = "";
    if (run && status === "running" && run.step_count) {
      detail = t("run_step", { step: run.step_count });
    } else if (run && status === "failed" && run.error) {
      detail = run.error;
    }
    // Paused at a spending limit: say what was spent and what to do, not "start this plan?".
    const budget = Boolean(run && status === "waiting_for_user" && run.pause_reason === "budget");
    if (budget) {
      this.runStatus.textContent = t("run_budget_paused");
      detail = run.error || "";
    }
    this.runDetail.textContent = detail;
    this.runDetail.title = detail;
    const stopped = Boolean(run) && FINISHED_RUN.has(status);
    const tokens = run ? Number(run.prompt_tokens || 0) + Number(run.completion_tokens || 0) : 0;
    const usage = stopped ? formatCost(Number(run.cost_usd || 0), tokens) : "";
    this.runUsage.textContent = usage ? t("run_usage", { usage }) : "";
    this.runUsage.hidden = !usage;
    const canAct = this.editable && Boolean(run);
    // People named to answer a session write and decide, but do not stop its runs.
    this.stopButton.hidden = !(canAct && !this.options.answerOnly && STOPPABLE_RUN.has(status));
    this.stopButton.disabled = stopping;
    // Someone named to answer writes only to a run waiting for the user (the server's rule).
    if (this.composer && this.options.answerOnly) {
      const answerable = status === "waiting_for_user";
      this.composer.hidden = !answerable;
      this.answerNote.hidden = answerable;
    }
    const waiting = canAct && status === "waiting_for_user" && !budget;
    const dismissed = waiting && this.dismissedRuns.has(run.id);
    this.confirm.hidden = !waiting || dismissed;
    this.startButton.hidden = !dismissed;
  }

  // --- messages ---------------------------------------------------------------------------

  /**
   * The page embeds only the newest messages: offer the older ones. `load(firstShownId)`
   * resolves to the messages before that id. A full reset (`setMessages`) offers them again.
   */
  offerEarlier(load) {
    this.loadEarlier = load;
    this.renderEarlierOffer();
  }

  renderEarlierOffer() {
    if (!this.loadEarlier || this.messages.size === 0) return;
    const button = h("button", {
      type: "button",
      class: "btn btn-small load-earlier",
      dataset: { action: "load-earlier" },
      text: t("load_earlier_messages"),
    });
    const item = h("li", { class: "msg-earlier" }, button);
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const first = Math.min(...this.messages.keys());
        for (const message of await this.loadEarlier(first)) {
          this.addMessage(message, { scroll: false });
        }
        item.remove();
      } catch (error) {
        console.error(error);
        button.disabled = false;
      }
    });
    this.list.prepend(item);
  }

  setMessages(messages) {
    this.messages.clear();
    this.callRows.clear();
    replaceChildren(this.list, this.emptyNote);
    if (this.workingLine) this.list.append(this.workingLine);
    for (const message of messages) this.addMessage(message, { scroll: false });
    this.renderEarlierOffer();
    this.scrollToEnd(true);
  }

  // --- external tool calls waiting for a person's decision ----------------------------------

  /** All calls waiting for approval (snapshot `pending_tool_calls`). */
  setToolCalls(records) {
    const pending = new Set((records || []).map((record) => record.tool_call_id));
    for (const callId of [...this.approvals.keys()]) {
      if (!pending.has(callId)) this.dropApproval(callId);
    }
    for (const record of records || []) this.updateToolCall(record);
  }

  /** One call changed (`session.tool_call`): show, or take down, its approval card. */
  updateToolCall(record) {
    const row = this.callRows.get(record.tool_call_id);
    if (row) {
      const label = t(`tool_status_${record.status}`);
      const detail = record.duration_ms ? ` · ${record.duration_ms} ms` : "";
      setCallStatus(row, record.status, label + detail, this.plan);
    }
    if (record.status !== "pending") {
      this.dropApproval(record.tool_call_id);
      return;
    }
    if (this.approvals.has(record.tool_call_id)) return;
    const card = this.approvalCard(record);
    this.approvals.set(record.tool_call_id, card);
    const stick = this.isNearEnd();
    if (row) row.after(card);
    else this.list.append(h("li", { class: "msg msg-tool" }, card));
    this.scrollToEnd(stick);
  }

  /**
   * How far a running call has got (`tool.progress`, the server's own words as text). Not
   * kept: the call's next `session.tool_call` event (its end) replaces it.
   * @param {{tool_call_id: string, progress: number, total: number | null,
   *   message: string | null}} event
   */
  showToolProgress(event) {
    const row = this.callRows.get(event.tool_call_id);
    // A late event of a call that has ended (the events of one session keep their order,
    // but a page that reconnected may hear one after the call's end) changes nothing.
    if (!row || ENDED_CALL.includes(row.dataset.callStatus || "")) return;
    const parts = [t("tool_status_running")];
    if (event.total) parts.push(t("tool_progress_of", { done: event.progress, total: event.total }));
    else parts.push(String(event.progress));
    if (event.message) parts.push(event.message);
    setChip(row, parts.join(" · "));
  }

  dropApproval(callId) {
    const card = this.approvals.get(callId);
    if (!card) return;
    const item = card.parentElement;
    card.remove();
    if (item && item.tagName === "LI" && item.childElementCount === 0) item.remove();
    this.approvals.delete(callId);
  }

  approvalCard(record) {
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
    if (!this.editable) {
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
      const ok = this.options.onDecide
        ? await this.options.onDecide(record.tool_call_id, {
            decision,
            note: note.value.trim(),
            always_allow: decision === "approve" && always.checked,
          })
        : false;
      if (!ok) for (const control of card.querySelectorAll("button, input")) control.disabled = false;
    };
    card.append(note);
    // "Always allow" speaks for the session's later calls: the owner's, not an answerer's.
    if (!this.options.answerOnly) {
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

  // --- a tool's questions to a person (MCP elicitation) -----------------------------------------

  /** All questions waiting for an answer (snapshot `pending_elicitations`). */
  setElicitations(records) {
    const pending = new Set((records || []).map((record) => record.id));
    for (const id of [...this.elicitations.keys()]) {
      if (!pending.has(id)) this.dropElicitation(id);
    }
    for (const record of records || []) this.updateElicitation(record);
  }

  /** One question changed (`session.elicitation`): show it while it waits, then take it down. */
  updateElicitation(record) {
    if (record.status !== "pending") {
      this.dropElicitation(record.id);
      return;
    }
    if (this.elicitations.has(record.id)) return;
    const card = elicitationCard(record, {
      editable: this.editable,
      onAnswer: (id, body) =>
        this.options.onElicitation ? this.options.onElicitation(id, body) : Promise.resolve(false),
    });
    this.elicitations.set(record.id, card);
    this.setRun(this.run);
    const stick = this.isNearEnd();
    const row = record.tool_call_id ? this.callRows.get(record.tool_call_id) : null;
    const item = h("li", { class: "msg msg-tool" }, card);
    if (row && row.closest("li")) row.closest("li").after(item);
    else this.list.append(item);
    this.emptyNote.hidden = true;
    this.scrollToEnd(stick);
  }

  dropElicitation(id) {
    const card = this.elicitations.get(id);
    if (!card) return;
    const item = card.parentElement;
    card.remove();
    if (item && item.tagName === "LI" && item.childElementCount === 0) item.remove();
    this.elicitations.delete(id);
    this.setRun(this.run);
  }

  // --- answers being written (streamed) -----------------------------------------------------

  /** A piece of an answer the model is writing (`message.delta`). */
  streamDelta({ answer_id: answerId, seq, text }) {
    let stream = this.streams.get(answerId);
    if (stream && seq <= stream.seq) return; // already in the snapshot's text
    if (!stream) stream = this.openStream(answerId);
    stream.seq = seq;
    stream.text += text;
    this.showStream(stream);
  }

  /** The partial answer of a (re)connect snapshot, or null when none is being written. */
  setStreaming(partial) {
    for (const answerId of [...this.streams.keys()]) {
      if (!partial || partial.answer_id !== answerId) this.dropStream(answerId);
    }
    if (!partial || this.storedAnswers().has(partial.answer_id)) return;
    const stream = this.streams.get(partial.answer_id) || this.openStream(partial.answer_id);
    stream.seq = partial.seq;
    stream.text = partial.text;
    this.showStream(stream);
  }

  /** The model call restarts (`message.reset`): its partial text is void. */
  dropStream(answerId) {
    const stream = this.streams.get(answerId);
    if (!stream) return;
    stream.element.remove();
    this.streams.delete(answerId);
    if (!this.options.transcriptOnly) this.showWorking();
  }

  openStream(answerId) {
    const element = h(
      "li",
      { class: "msg msg-assistant msg-streaming", dataset: { answer: answerId } },
      h(
        "div",
        { class: "msg-meta" },
        h("span", { class: "msg-author", text: t("agent") }),
        h("span", { class: "msg-writing", text: t("agent_writing") }),
      ),
    );
    const stream = { element, text: "", seq: -1, bubble: null };
    this.streams.set(answerId, stream);
    const stick = this.isNearEnd();
    this.list.append(element);
    markContinuation(element);
    this.emptyNote.hidden = true;
    this.showWorking();
    this.scrollToEnd(stick);
    return stream;
  }

  showStream(stream) {
    const stick = this.isNearEnd();
    // Rendered progressively: each piece re-renders the text so far (a list or a code block
    // takes its final shape as it completes).
    const bubble = markdownElement(stream.text, "bubble");
    if (stream.bubble) stream.bubble.replaceWith(bubble);
    else stream.element.append(bubble);
    stream.bubble = bubble;
    this.scrollToEnd(stick);
  }

  storedAnswers() {
    return new Set(
      [...this.list.querySelectorAll("li.msg[data-answer-id]")].map((el) => el.dataset.answerId),
    );
  }

  addMessage(message, { scroll = true } = {}) {
    if (this.messages.has(message.id)) return;
    // The stored answer replaces the text streamed while it was written.
    if (message.answer_id) this.dropStream(message.answer_id);
    const stick = this.isNearEnd();
    const element = this.renderMessage(message);
    this.messages.set(message.id, element || true);
    if (element) {
      // Keep transcript order by id even if a message arrives late.
      const later = [...this.messages.entries()].find(
        ([id, el]) => id > message.id && el instanceof Element && el.isConnected,
      );
      this.list.insertBefore(element, later ? later[1] : null);
      markContinuation(element);
      if (element.nextElementSibling) markContinuation(element.nextElementSibling);
    }
    this.emptyNote.hidden = this.messages.size > 0;
    if (!this.options.transcriptOnly) this.showWorking();
    if (scroll) this.scrollToEnd(stick);
  }

  renderMessage(message) {
    if (message.role === "tool") {
      const row = message.tool_call_id ? this.callRows.get(message.tool_call_id) : null;
      if (row) {
        fillResult(row, message.content, this.plan);
        return null;
      }
      const standalone = activityRow(message.tool_name || t("tool"), "", this.plan);
      fillResult(standalone, message.content, this.plan);
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
        const row = activityRow(fn.name || t("tool"), fn.arguments || "", this.plan);
        if (call.id) this.callRows.set(call.id, row);
        group.append(row);
      }
      element.append(group);
    }
    return element;
  }

  /**
   * An agent's step read people's messages up to `up_to` (`session.messages_seen`).
   * @param {{up_to: number, seen: {at: string | null, run_id: number | null,
   *   step: number | null}}} event
   */
  markMessagesSeen(event) {
    for (const [id, element] of this.messages) {
      if (id > event.up_to || !(element instanceof Element)) continue;
      if (!element.classList.contains("msg-user") || element.querySelector(".msg-seen")) continue;
      const attachments = element.querySelector(".msg-attachments");
      element.insertBefore(seenMark(event.seen), attachments);
    }
  }

  isNearEnd() {
    return this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 80;
  }

  scrollToEnd(force) {
    if (force) this.list.scrollTop = this.list.scrollHeight;
  }
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
function seenMark(seen) {
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
function markContinuation(element) {
  let previous = element.previousElementSibling;
  while (previous && previous.classList.contains("msg-working")) {
    previous = previous.previousElementSibling;
  }
  const agentSide = (el) =>
    el && (el.classList.contains("msg-assistant") || el.classList.contains("msg-tool"));
  element.classList.toggle("msg-continued", Boolean(agentSide(element) && agentSide(previous)));
}
