// Answers the model is still writing: each piece (`message.delta`) re-renders the text so far
// at the end of the chat; a reconnect's snapshot brings the partial text back, a restarted
// model call (`message.reset`) takes it down, and the stored answer replaces it.

import { markContinuation } from "./chat-message.js";
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { markdownElement } from "./markdown.js";

/** @typedef {import("./chat.js").ChatView} ChatView */
/** @typedef {{element: HTMLElement, text: string, seq: number, bubble: HTMLElement | null}} Stream */

export class AnswerStreams {
  /** @param {ChatView} chat */
  constructor(chat) {
    this.chat = chat;
    /** @type {Map<string, Stream>} answer id -> what has been written so far */
    this.streams = new Map();
  }

  /** How many answers are being written. */
  get size() {
    return this.streams.size;
  }

  /** A piece of an answer the model is writing (`message.delta`). */
  delta({ answer_id: answerId, seq, text }) {
    let stream = this.streams.get(answerId);
    if (stream && seq <= stream.seq) return; // already in the snapshot's text
    if (!stream) stream = this.open(answerId);
    stream.seq = seq;
    stream.text += text;
    this.show(stream);
  }

  /** The partial answer of a (re)connect snapshot, or null when none is being written. */
  restore(partial) {
    for (const answerId of [...this.streams.keys()]) {
      if (!partial || partial.answer_id !== answerId) this.drop(answerId);
    }
    if (!partial || this.stored().has(partial.answer_id)) return;
    const stream = this.streams.get(partial.answer_id) || this.open(partial.answer_id);
    stream.seq = partial.seq;
    stream.text = partial.text;
    this.show(stream);
  }

  /** The model call restarts (`message.reset`): its partial text is void. */
  drop(answerId) {
    const stream = this.streams.get(answerId);
    if (!stream) return;
    stream.element.remove();
    this.streams.delete(answerId);
    if (!this.chat.options.transcriptOnly) this.chat.showWorking();
  }

  open(answerId) {
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
    const stick = this.chat.isNearEnd();
    this.chat.list.append(element);
    markContinuation(element);
    this.chat.emptyNote.hidden = true;
    this.chat.showWorking();
    this.chat.scrollToEnd(stick);
    return stream;
  }

  show(stream) {
    const stick = this.chat.isNearEnd();
    // Rendered progressively: each piece re-renders the text so far (a list or a code block
    // takes its final shape as it completes).
    const bubble = markdownElement(stream.text, "bubble");
    if (stream.bubble) stream.bubble.replaceWith(bubble);
    else stream.element.append(bubble);
    stream.bubble = bubble;
    this.chat.scrollToEnd(stick);
  }

  /** The answer ids the transcript already holds as messages. */
  stored() {
    return new Set(
      [...this.chat.list.querySelectorAll("li.msg[data-answer-id]")].map((el) => el.dataset.answerId),
    );
  }
}
