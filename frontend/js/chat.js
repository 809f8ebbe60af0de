// The chat: the transcript (messages drawn by chat-message.js, tool activity folded into
// compact rows by chat-activity.js), answers streamed as they are written, tool calls waiting
// for approval (chat-approval.js) and tools' questions, the run bar with the "Start this
// plan?" prompt (chat-run.js) and the message box (chat-composer.js).

import { approvalCard } from "./chat-approval.js";
import { ENDED_CALL, renderLine, setCallStatus, setChip } from "./chat-activity.js";
import { Composer } from "./chat-composer.js";
import { markContinuation, renderMessage, seenMark } from "./chat-message.js";
import { RunBar } from "./chat-run.js";
import { AnswerStreams } from "./chat-stream.js";
import { h, replaceChildren } from "./dom.js";
import { elicitationCard } from "./elicitation-form.js";
import { t } from "./i18n.js";

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
    this.callRows = new Map(); // tool call id -> <details> row
    this.approvals = new Map(); // tool call id -> approval card (calls waiting for a person)
    this.elicitations = new Map(); // elicitation id -> card (a tool's question to a person)
    this.run = null;
    /** @type {import("./types.js").PlanSnapshot | null} the plan shown: names activity lines */
    this.plan = null;
    this.answers = new AnswerStreams(this);
    this.build();
  }

  build() {
    this.root.classList.add("chat");
    if (!this.options.transcriptOnly) {
      this.runBar = new RunBar(this);
      this.root.append(this.runBar.el, this.runBar.confirm);
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
      this.composerBox = new Composer(this.options);
      this.composer = this.composerBox.form;
      this.extras = this.composerBox.extras;
      if (this.extras) this.root.append(this.extras.element);
      this.answerNote = h("p", { class: "read-only-note", text: t("answer_only_chat") });
      this.answerNote.hidden = true;
      this.root.append(this.answerNote, this.composer);
    } else if (!this.options.transcriptOnly) {
      this.root.append(h("p", { class: "read-only-note", text: t("read_only_chat") }));
    }
    this.setRun(null);
  }

  /** The session's plan mode changed (here or elsewhere). */
  setPlanMode(on) {
    if (this.composerBox) this.composerBox.setPlanMode(on);
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
      this.answers.size > 0 || Boolean(this.list.querySelector(".tool-row.tool-pending"));
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
    this.runBar.show(run);
    // Someone named to answer writes only to a run waiting for the user (the server's rule).
    if (this.composer && this.options.answerOnly) {
      const answerable = Boolean(run) && run.status === "waiting_for_user";
      this.composer.hidden = !answerable;
      this.answerNote.hidden = answerable;
    }
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
      let detail = record.duration_ms ? ` · ${record.duration_ms} ms` : "";
      if (record.status === "running" && record.task_status) detail = taskDetail(record);
      setCallStatus(row, record.status, label + detail, this.plan);
    }
    if (record.status !== "pending") {
      this.dropApproval(record.tool_call_id);
      return;
    }
    if (this.approvals.has(record.tool_call_id)) return;
    const card = approvalCard(record, {
      editable: this.editable,
      answerOnly: this.options.answerOnly,
      onDecide: this.options.onDecide,
    });
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

  addMessage(message, { scroll = true } = {}) {
    if (this.messages.has(message.id)) return;
    // The stored answer replaces the text streamed while it was written.
    if (message.answer_id) this.answers.drop(message.answer_id);
    const stick = this.isNearEnd();
    const element = renderMessage(message, this.plan, this.callRows);
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

/**
 * What a call its server runs as an MCP task says while it runs: " · working — 40%" (the
 * task's status, then the server's status message, its progress, set as text).
 * @param {{task_status: string, task_message?: string | null}} record
 */
function taskDetail(record) {
  const known = ["working", "input_required", "completed", "failed", "cancelled"];
  const status = known.includes(record.task_status) ? t(`tool_task_${record.task_status}`) : "";
  const said = [status, record.task_message || ""].filter(Boolean).join(" — ");
  return said ? ` · ${said}` : "";
}
