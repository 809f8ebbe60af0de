// The session page: wires the chat and the board to the REST API and the session's websocket.
// The board follows the server: every change is sent over REST (the one write path) and comes
// back as a plan event that the board applies exactly like planboard/snapshots.py.

import { ApiError, api, listOf, messagesBefore } from "./api.js";
import { VersionGap, applyEvent, emptyPlan, isFinished, isPlanSnapshot } from "./board-state.js";
import { BoardView } from "./board.js";
import { mountBoardViews } from "./board-views.js";
import { setUpAnswerers } from "./answerers.js";
import { setUpSessionTools } from "./session-tools.js";
import { ChatView } from "./chat.js";
import { setUpChatCollapse } from "./chat-collapse.js";
import { composerExtras } from "./composer-extras.js";
import { FilesView } from "./files.js";
import { askText } from "./dialog.js";
import { loadStrings, t } from "./i18n.js";
import { LiveSocket } from "./live.js";
import { PresenceView } from "./presence.js";
import { initTabs } from "./tabs.js";
import { toast, toastError } from "./toast.js";

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").PlanEvent} PlanEvent */
/** @typedef {import("./types.js").SocketMessage} SocketMessage */

const UNDO_MS = 6000;
// Changes this tab made recently are not highlighted when their event comes back.
const OWN_CHANGE_MS = 8000;

class SessionPage {
  constructor(page) {
    this.me = page.me;
    this.editable = page.can_edit;
    /** Told the session's toolsets when they change (the "Tools" control). */
    this.onToolsets = (/** @type {number[]} */ _ids) => {};
    this.historyUrl = page.history_url;
    this.session = page.session;
    this.run = page.session.latest_run;
    /** @type {PlanSnapshot | null} */
    this.plan = page.session.current_plan || page.last_plan || null;
    this.ownChanges = new Map(); // subtask id or "plan" -> when this tab changed it
    this.pendingDeletes = new Map(); // subtask id -> {commit, note}

    const layout = document.getElementById("session-layout");
    this.tabs = initTabs(layout, this.plan ? "board" : "chat");
    this.indicator = document.getElementById("live-indicator");
    this.title = document.getElementById("session-title");
    setUpChatCollapse(layout, document.querySelector(".session-bar .spacer"));

    this.board = new BoardView(document.getElementById("board"), {
      editable: this.editable,
      historyPlanUrl: (id) => `${this.historyUrl}plans/${id}/`,
      emptyMessage: t(this.editable ? "no_plan" : "no_plan_read_only"),
      // The detail panel: a link to a card opens it; it lists the card's tool calls.
      urlHash: true,
      loadMessages: () => messagesBefore(this.session.id, Number.MAX_SAFE_INTEGER),
      actions: {
        setState: (subtask, state) => this.setState(subtask, state),
        move: (subtask, index) => this.move(subtask, index),
        change: (subtask, change) => this.change(subtask, change),
        edit: (subtask, fields) => this.edit(subtask, fields),
        remove: (subtask) => this.remove(subtask),
        add: (fields, index) => this.add(fields, index),
        editPlan: (fields) => this.editPlan(fields),
        finishPlan: (state) => this.finishPlan(state),
      },
    });
    // Someone the owner named to answer: they answer what the session waits for (a question,
    // a plan's go-ahead, a call's approval); starting or steering work, attaching resources
    // and "always allow" are the owner's (`can_write`), and the server refuses them the same.
    const answerOnly = !page.can_write && Boolean(page.can_answer);
    this.chat = new ChatView(document.getElementById("chat"), {
      editable: this.editable || Boolean(page.can_answer),
      answerOnly,
      onSend: (text, resources) => this.sendMessage(text, "reply", resources),
      composerExtras: answerOnly ? undefined : (input) => composerExtras(this.session.id, input),
      onStop: () => this.stopRun(),
      onGoAhead: () =>
        this.sendMessage(t("go_ahead_message"), this.awaitsConfirmation() ? "confirm" : "reply"),
      onKeepEditing: () => this.tabs.show("board"),
      onPlanMode: (on) => this.setPlanMode(on),
      onDecide: (callId, decision) => this.decideToolCall(callId, decision),
      onElicitation: (id, body) => this.answerElicitation(id, body),
      planMode: this.session.plan_mode,
      isOwner: Boolean(this.me && this.session.owner && this.me.id === this.session.owner.id),
    });
    this.chat.setPlan(this.plan);
    this.views = mountBoardViews(this.board, document.getElementById("board-views"));
    this.board.marks.setUsage(this.session.usage);
    this.board.marks.setUnseen(this.session.unseen_edits);
    this.board.render(this.plan);
    if (this.editable) this.loadProfiles();
    this.files = new FilesView(document.getElementById("files"));
    this.files.render(this.session.files);
    this.chat.setMessages(page.messages);
    this.chat.answers.restore(page.session.streaming || null);
    if (page.earlier_messages) {
      this.chat.offerEarlier((firstId) => messagesBefore(this.session.id, firstId));
    }
    this.chat.setRun(this.run);
    if (this.chat.extras) this.chat.extras.refresh();
    this.chat.setToolCalls(this.session.pending_tool_calls);
    this.chat.setElicitations(this.session.pending_elicitations);

    this.live = new LiveSocket(`/ws/sessions/${this.session.id}/`, {
      onMessage: (message) => this.onMessage(message),
      onStatus: (status) => this.showStatus(status),
    });
    this.presence = new PresenceView({
      me: this.me.id,
      bar: document.getElementById("presence"),
      board: document.getElementById("board"),
      send: (message) => this.live.send(message),
    });
    this.live.start();
    window.addEventListener("pagehide", () => this.flushDeletes());
  }

  // --- urls ----------------------------------------------------------------------------------

  planUrl(planId = this.plan.id) {
    return `/api/plans/${planId}/`;
  }

  subtaskUrl(subtaskId) {
    return `/api/plans/${this.plan.id}/subtasks/${subtaskId}/`;
  }

  sessionUrl(suffix = "") {
    return `/api/sessions/${this.session.id}/${suffix}`;
  }

  // --- live updates ---------------------------------------------------------------------------

  showStatus(status) {
    this.indicator.dataset.status = status;
    this.indicator.querySelector(".live-text").textContent = t(`live_${status}`);
    this.indicator.title = t(`live_${status}_help`);
    if (status !== "live" && this.presence) this.presence.disconnected();
  }

  /** @param {SocketMessage} message */
  onMessage(message) {
    switch (message.type) {
      case "snapshot":
        if (message.session) this.onSessionSnapshot(message.session, message.messages);
        else if (message.plan) this.showSnapshot(message.plan);
        this.presence.connected();
        break;
      case "plan.event":
        this.onPlanEvent(message);
        break;
      case "session.plan":
        this.onPlanSwitch(message.plan_id);
        break;
      case "session.message":
        this.chat.addMessage(message.message);
        this.tabs.notify("chat");
        break;
      case "session.files":
        this.files.render(message.files);
        break;
      case "session.tool_call":
        this.chat.updateToolCall(message.tool_call);
        break;
      case "tool.progress":
        this.chat.showToolProgress(message);
        break;
      case "session.elicitation":
        this.chat.updateElicitation(message.elicitation);
        this.tabs.notify("chat");
        break;
      case "plan.usage":
        this.board.marks.addUsage(message);
        break;
      case "plan.seen":
        if (this.plan && message.plan_id === this.plan.id) this.board.marks.markSeen(message.seen);
        break;
      case "session.messages_seen":
        this.chat.markMessagesSeen(message);
        break;
      case "message.delta":
        this.chat.answers.delta(message);
        break;
      case "message.reset":
        this.chat.answers.drop(message.answer_id);
        break;
      case "session.run":
        this.setRun(message.run);
        break;
      case "session.updated":
        this.session = { ...this.session, ...message.session };
        this.chat.setPlanMode(this.session.plan_mode);
        this.showTitle();
        if (message.toolsets) {
          this.onToolsets(message.toolsets);
          if (this.chat.extras) this.chat.extras.refresh();
        }
        break;
      default:
        this.presence.onMessage(message);
        break;
    }
  }

  onSessionSnapshot(session, messages) {
    this.session = session;
    this.chat.setPlanMode(session.plan_mode);
    this.board.marks.setUsage(session.usage);
    this.board.marks.setUnseen(session.unseen_edits);
    this.showTitle();
    this.setRun(session.latest_run);
    for (const message of messages || []) this.chat.addMessage(message, { scroll: false });
    this.chat.answers.restore(session.streaming || null);
    this.chat.setToolCalls(session.pending_tool_calls);
    this.chat.setElicitations(session.pending_elicitations);
    this.files.render(session.files);
    this.chat.scrollToEnd(true);
    if (session.current_plan) {
      this.showSnapshot(session.current_plan);
    } else if (this.plan && this.plan.session_id === session.id) {
      // No current plan: keep showing the last one, refreshed (it may have just finished).
      if (!isFinished(this.plan)) this.refreshPlan(this.plan.id);
    } else {
      this.setPlan(null);
    }
  }

  /** @param {PlanEvent} event */
  onPlanEvent(event) {
    if (this.plan && event.plan_id === this.plan.id) {
      if (event.version <= this.plan.version) return; // already shown (e.g. from a REST answer)
      let next;
      try {
        next = applyEvent(this.plan, event);
      } catch (error) {
        if (error instanceof VersionGap) return this.resync();
        throw error;
      }
      this.board.marks.markPending(event);
      this.setPlan(next, this.highlightFor(event));
      this.tabs.notify("board");
    } else if (event.action === "plan_created" && event.version === 1) {
      // A new plan: its first event carries every subtask, so no fetch is needed.
      this.setPlan(applyEvent(emptyPlan({ id: event.plan_id }), event), { flashHead: true });
      this.tabs.notify("board");
    } else if (event.plan_id === this.session.current_plan_id) {
      this.resync();
    }
  }

  async setPlanMode(on) {
    try {
      const session = await api("PATCH", this.sessionUrl(), { plan_mode: on });
      this.session = { ...this.session, ...session };
      toast(t(on ? "plan_mode_on" : "plan_mode_off"));
      return true;
    } catch (error) {
      toastError(error);
      return false;
    }
  }

  async decideToolCall(callId, decision) {
    try {
      const url = this.sessionUrl(`tool-calls/${encodeURIComponent(callId)}/decision/`);
      const answer = await api("POST", url, decision);
      if (answer && answer.tool_call) this.chat.updateToolCall(answer.tool_call);
      if (answer && answer.run) this.setRun(answer.run);
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
      if (answer && answer.elicitation) this.chat.updateElicitation(answer.elicitation);
      return true;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  async loadProfiles() {
    try {
      this.board.setProfiles(listOf(await api("GET", "/api/profiles/")));
    } catch (error) {
      console.error(error); // suggestions only: the field still takes any name
    }
  }

  onPlanSwitch(planId) {
    this.session = { ...this.session, current_plan_id: planId };
    if (planId === null) {
      // The plan was finished: it stays on the board, marked finished, with a history link.
      if (this.plan && !isFinished(this.plan)) this.refreshPlan(this.plan.id);
      return;
    }
    if (!this.plan || this.plan.id !== planId) this.refreshPlan(planId);
  }

  /**
   * Who changed what: others' changes are highlighted, this tab's own are not.
   * @param {PlanEvent} event
   */
  highlightFor(event) {
    const ids = new Set((event.patch.upsert || []).map((subtask) => subtask.id));
    if (event.subtask_id !== null && event.subtask_id !== undefined) ids.add(event.subtask_id);
    const actor = event.actor;
    const mine = actor.kind === "user" && actor.user_id === this.me.id;
    const recent = (key) => mine && Date.now() - (this.ownChanges.get(key) || 0) < OWN_CHANGE_MS;
    // A card this tab just added has no id yet when the request leaves.
    if (event.action === "subtask_added" && recent("add")) return { flash: [], flashHead: false };
    return {
      flash: [...ids].filter((id) => !recent(id)),
      flashHead: event.action.startsWith("plan_") && !recent("plan"),
    };
  }

  /**
   * A full snapshot (socket or REST): never go back to an older version of the same plan.
   * `highlight` marks what changed since the shown version (off for this tab's own writes).
   */
  showSnapshot(snapshot, { highlight = true } = {}) {
    if (!isPlanSnapshot(snapshot)) return;
    const same = this.plan && this.plan.id === snapshot.id;
    if (same && snapshot.version <= this.plan.version) return;
    const flash = same && highlight ? changedIds(this.plan, snapshot) : [];
    this.setPlan(snapshot, { flash });
  }

  /**
   * @param {PlanSnapshot | null} plan
   * @param {{flash?: number[], flashHead?: boolean}} [highlight]
   */
  setPlan(plan, highlight = {}) {
    this.plan = plan;
    this.board.render(plan, highlight);
    this.chat.setPlan(plan);
  }

  setRun(run) {
    this.run = run;
    this.chat.setRun(run);
  }

  showTitle() {
    if (this.title) {
      this.title.textContent = this.session.title || t("untitled_session");
      this.title.title = this.title.textContent; // the whole title, when ellipsised
    }
  }

  resync() {
    if (this.live.resync()) return;
    this.refreshSession();
  }

  async refreshPlan(planId) {
    try {
      this.showSnapshot(await api("GET", this.planUrl(planId)));
    } catch (error) {
      this.reportError(error);
    }
  }

  async refreshSession() {
    try {
      const [session, messages] = await Promise.all([
        api("GET", this.sessionUrl()),
        api("GET", this.sessionUrl("messages/")),
      ]);
      this.onSessionSnapshot(session, listOf(messages));
    } catch (error) {
      this.reportError(error);
    }
  }

  // --- writes --------------------------------------------------------------------------------

  async write(method, url, body, touched) {
    if (touched !== undefined) this.ownChanges.set(touched, Date.now());
    try {
      const data = await api(method, url, body);
      // Writes answer with the fresh snapshot ({plan: …}); showing it now saves a wait.
      const snapshot = data && isPlanSnapshot(data.plan) ? data.plan : data;
      if (isPlanSnapshot(snapshot) && this.plan && snapshot.id === this.plan.id) {
        this.showSnapshot(snapshot, { highlight: false });
      }
      // Without the socket nothing would show the change: fetch it.
      if (!this.live.isOpen() && this.plan) this.refreshPlan(this.plan.id);
      return true;
    } catch (error) {
      this.reportError(error);
      return false;
    }
  }

  reportError(error) {
    if (error instanceof ApiError && error.status === 409 && isPlanSnapshot(error.body.snapshot)) {
      this.showSnapshot(error.body.snapshot);
      toast(t("err_stale_version"), { kind: "warning" });
      return;
    }
    toastError(errorText(error));
  }

  async setState(subtask, state) {
    const body = { state };
    if (state === "done") {
      const outcome = await this.askOutcome(subtask);
      if (outcome === null) return false;
      if (outcome) body.outcome = outcome;
    }
    return this.write("PATCH", this.subtaskUrl(subtask.id), body, subtask.id);
  }

  askOutcome(subtask) {
    return askText({
      title: t("finish_subtask_title", { name: subtask.name }),
      message: subtask.expected_outcome
        ? t("finish_subtask_expected", { expected: subtask.expected_outcome })
        : "",
      label: t("outcome"),
      confirm: t("mark_done"),
    });
  }

  move(subtask, index) {
    // Positions depend on what this tab saw: a stale view is refused, not misapplied.
    return this.write(
      "PATCH",
      this.subtaskUrl(subtask.id),
      { index, expected_version: this.plan.version },
      subtask.id,
    );
  }

  async change(subtask, change) {
    const body = { ...change };
    if (change.state === "done") {
      const outcome = await this.askOutcome(subtask);
      if (outcome === null) return false;
      if (outcome) body.outcome = outcome;
    }
    if ("index" in change) body.expected_version = this.plan.version;
    return this.write("PATCH", this.subtaskUrl(subtask.id), body, subtask.id);
  }

  edit(subtask, fields) {
    return this.write("PATCH", this.subtaskUrl(subtask.id), fields, subtask.id);
  }

  add(fields, index) {
    const body = { ...fields };
    if (index !== null && index !== undefined) body.index = index;
    return this.write("POST", `${this.planUrl()}subtasks/`, body, "add");
  }

  editPlan(fields) {
    return this.write("PATCH", this.planUrl(), fields, "plan");
  }

  async finishPlan(state) {
    const outcome = await askText({
      title: t(state === "done" ? "finish_plan_title" : "abandon_plan_title"),
      message: t(state === "done" ? "finish_plan_text" : "abandon_plan_text"),
      label: t(state === "done" ? "outcome" : "abandon_reason"),
      confirm: t(state === "done" ? "finish_plan" : "abandon_plan"),
      required: true,
    });
    if (!outcome) return false;
    return this.write("PATCH", this.planUrl(), { state, outcome }, "plan");
  }

  /** Delete after a short grace period, so that Undo needs no server round trip. */
  remove(subtask) {
    const id = subtask.id;
    const url = this.subtaskUrl(id);
    this.board.hide(id);
    const commit = async ({ keepalive = false } = {}) => {
      if (!this.pendingDeletes.has(id)) return;
      this.pendingDeletes.delete(id);
      this.ownChanges.set(id, Date.now());
      try {
        await api("DELETE", url, undefined, { keepalive });
        if (!this.live.isOpen() && this.plan) this.refreshPlan(this.plan.id);
      } catch (error) {
        this.board.unhide(id);
        this.reportError(error);
      }
      // On success the id stays hidden until its delete event removes it from the plan.
    };
    const note = toast(t("deleted_subtask", { name: subtask.name }), {
      actionLabel: t("undo"),
      timeout: UNDO_MS,
      onAction: () => {
        this.pendingDeletes.delete(id);
        this.board.unhide(id);
      },
      onTimeout: () => commit(),
    });
    this.pendingDeletes.set(id, { commit, note });
    return Promise.resolve(true);
  }

  flushDeletes() {
    for (const { commit, note } of [...this.pendingDeletes.values()]) {
      note.dismiss();
      commit({ keepalive: true });
    }
  }

  /** The server's rule (`selectors.awaits_confirmation`): a drafted plan nobody started. */
  awaitsConfirmation() {
    const plan = this.plan;
    if (!this.session.need_user_confirm || !plan || isFinished(plan)) return false;
    const states = plan.subtasks.map((subtask) => subtask.state);
    return states.includes("todo") && !states.includes("in_progress") && !states.includes("done");
  }

  /** `intent` "confirm" records the message as the plan's go-ahead (a decision). */
  async sendMessage(content, intent = "reply", resources = []) {
    try {
      /** @type {Record<string, unknown>} */
      const body = { content, intent };
      if (resources.length) body.resources = resources;
      await api("POST", this.sessionUrl("messages/"), body);
    } catch (error) {
      this.reportError(error);
      return false;
    }
    if (!this.live.isOpen()) this.refreshSession();
    return true;
  }

  async stopRun() {
    try {
      await api("POST", this.sessionUrl("cancel/"), {});
    } catch (error) {
      this.reportError(error);
    }
  }
}

function changedIds(before, after) {
  const old = new Map(before.subtasks.map((subtask) => [subtask.id, JSON.stringify(subtask)]));
  return after.subtasks
    .filter((subtask) => old.get(subtask.id) !== JSON.stringify(subtask))
    .map((subtask) => subtask.id);
}

/** A readable message in the page's language when we know the error, else the server's. */
export function errorText(error) {
  if (!(error instanceof ApiError)) return String(error);
  if (error.status === 0) return t("err_network");
  const key = `err_${error.code}`;
  const translated = t(key);
  if (translated !== key) return translated;
  if (error.status === 403) return t("err_forbidden");
  return error.message;
}

loadStrings();
const page = JSON.parse(document.getElementById("pb-page").textContent);
// Exposed for debugging in the console and for the browser tests.
const sessionPage = new SessionPage(page);
window.planboard = sessionPage;
setUpAnswerers(page.session.id, page.answerers || []);
sessionPage.onToolsets = setUpSessionTools(page.session.id, page.session.toolsets || []);
