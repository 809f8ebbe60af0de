// What the chat asks of the server on the session page: a message (or the plan's go-ahead,
// recorded as a decision when a drafted plan waits for it), stopping the run, the plan-mode
// switch, a tool call's approval and the answer to a tool's question.

import { api } from "./api.js";
import { isFinished } from "./board-state.js";
import { t } from "./i18n.js";
import { toast, toastError } from "./toast.js";

/**
 * What these writes need from the session page.
 * @typedef {object} TalkingPage
 * @property {Record<string, any>} session
 * @property {import("./types.js").PlanSnapshot | null} plan
 * @property {import("./chat.js").ChatView} chat
 * @property {import("./live.js").LiveSocket} live
 * @property {import("./plan-writes.js").PlanWrites} writes reports errors
 * @property {(suffix?: string) => string} sessionUrl
 * @property {(run: import("./types.js").RunSnapshot | null) => void} setRun
 * @property {() => Promise<void>} refreshSession
 */

export class SessionWrites {
  /** @param {TalkingPage} page */
  constructor(page) {
    this.page = page;
  }

  /** "Go ahead": the plan's confirmation when one waits for it, else a plain message. */
  goAhead() {
    return this.sendMessage(t("go_ahead_message"), this.awaitsConfirmation() ? "confirm" : "reply");
  }

  async setPlanMode(on) {
    try {
      const session = await api("PATCH", this.page.sessionUrl(), { plan_mode: on });
      this.page.session = { ...this.page.session, ...session };
      toast(t(on ? "plan_mode_on" : "plan_mode_off"));
      return true;
    } catch (error) {
      toastError(error);
      return false;
    }
  }

  async decideToolCall(callId, decision) {
    try {
      const url = this.page.sessionUrl(`tool-calls/${encodeURIComponent(callId)}/decision/`);
      const answer = await api("POST", url, decision);
      if (answer && answer.tool_call) this.page.chat.updateToolCall(answer.tool_call);
      if (answer && answer.run) this.page.setRun(answer.run);
      return true;
    } catch (error) {
      toastError(error);
      return false;
    }
  }

  /** Answer a tool's question; true when answered, else the reason (shown on its card). */
  async answerElicitation(id, body) {
    try {
      const answer = await api("POST", `/api/elicitations/${id}/answer/`, body);
      if (answer && answer.elicitation) this.page.chat.updateElicitation(answer.elicitation);
      return true;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  /** The server's rule (`selectors.awaits_confirmation`): a drafted plan nobody started. */
  awaitsConfirmation() {
    const plan = this.page.plan;
    if (!this.page.session.need_user_confirm || !plan || isFinished(plan)) return false;
    const states = plan.subtasks.map((subtask) => subtask.state);
    return states.includes("todo") && !states.includes("in_progress") && !states.includes("done");
  }

  /** `intent` "confirm" records the message as the plan's go-ahead (a decision). */
  async sendMessage(content, intent = "reply", resources = []) {
    try {
      /** @type {Record<string, unknown>} */
      const body = { content, intent };
      if (resources.length) body.resources = resources;
      await api("POST", this.page.sessionUrl("messages/"), body);
    } catch (error) {
      this.page.writes.reportError(error);
      return false;
    }
    if (!this.page.live.isOpen()) this.page.refreshSession();
    return true;
  }

  async stopRun() {
    try {
      await api("POST", this.page.sessionUrl("cancel/"), {});
    } catch (error) {
      this.page.writes.reportError(error);
    }
  }
}
