// The session page: wires the chat and the board to the REST API and the session's websocket.
// The board follows the server: every change is sent over REST (the one write path) and comes
// back as a plan event that the board applies exactly like planboard/snapshots.py. The
// writes themselves are plan-writes.js (the board's) and session-writes.js (the chat's).

import { api, listOf, messagesBefore } from "./api.js";
import { VersionGap, applyEvent, emptyPlan, isFinished, isPlanSnapshot } from "./board-state.js";
import { BoardView } from "./board.js";
import { mountBoardViews } from "./board-views.js";
import { setUpAnswerers } from "./answerers.js";
import { setUpSessionTools } from "./session-tools.js";
import { ChatView } from "./chat.js";
import { setUpChatCollapse } from "./chat-collapse.js";
import { composerExtras } from "./composer-extras.js";
import { FilesView } from "./files.js";
import { loadStrings, t } from "./i18n.js";
import { LiveSocket } from "./live.js";
import { PlanWrites } from "./plan-writes.js";
import { PresenceView } from "./presence.js";
import { SessionWrites } from "./session-writes.js";
import { initTabs } from "./tabs.js";

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").PlanEvent} PlanEvent */
/** @typedef {import("./types.js").SocketMessage} SocketMessage */

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
    this.writes = new PlanWrites(this);
    this.talk = new SessionWrites(this);

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
      // People's changes to the plan (plan-writes.js).
      actions: this.writes,
    });
    // Someone the owner named to answer: they answer what the session waits for (a question,
    // a plan's go-ahead, a call's approval); starting or steering work, attaching resources
    // and "always allow" are the owner's (`can_write`), and the server refuses them the same.
    const answerOnly = !page.can_write && Boolean(page.can_answer);
    this.chat = new ChatView(document.getElementById("chat"), {
      editable: this.editable || Boolean(page.can_answer),
      answerOnly,
      onSend: (text, resources) => this.talk.sendMessage(text, "reply", resources),
      composerExtras: answerOnly ? undefined : (input) => composerExtras(this.session.id, input),
      onStop: () => this.talk.stopRun(),
      onGoAhead: () => this.talk.goAhead(),
      onKeepEditing: () => this.tabs.show("board"),
      onPlanMode: (on) => this.talk.setPlanMode(on),
      onDecide: (callId, decision) => this.talk.decideToolCall(callId, decision),
      onElicitation: (id, body) => this.talk.answerElicitation(id, body),
      planMode: this.session.plan_mode,
      isOwner: Boolean(this.me && this.session.owner && this.me.id === this.session.owner.id),
    });
    this.chat.setPlan(this.plan);
    this.views = mountBoardViews(this.board, document.getElementById("board-views"));
    this.showSpent(this.session);
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
    for (const record of this.session.calls_in_flight || []) this.chat.updateToolCall(record);
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
    window.addEventListener("pagehide", () => this.writes.flushDeletes());
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
        if (this.plan && message.plan_id === this.plan.id) {
          this.board.marks.markSeen(message.plan_id, message.seen);
        }
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
      case "session.schedule":
        // The schedule dialog (schedule-panel.js) follows it while open.
        document.dispatchEvent(new CustomEvent("pb-schedule", { detail: message }));
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
    this.showSpent(session);
    this.showTitle();
    this.setRun(session.latest_run);
    for (const message of messages || []) this.chat.addMessage(message, { scroll: false });
    this.chat.answers.restore(session.streaming || null);
    this.chat.setToolCalls(session.pending_tool_calls);
    for (const record of session.calls_in_flight || []) this.chat.updateToolCall(record);
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
      const marked = this.board.marks.markPending(event);
      if (event.version <= this.plan.version) {
        // Already shown (from the REST answer to the edit): only its mark is new.
        if (marked) this.board.marks.changed();
        return;
      }
      let next;
      try {
        next = applyEvent(this.plan, event);
      } catch (error) {
        if (error instanceof VersionGap) return this.resync();
        throw error;
      }
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

  /** A session snapshot's figures and marks on the board: what was spent, what is unseen. */
  showSpent(session) {
    const marks = this.board.marks;
    marks.setSessionSpent({ cost_usd: Number(session.spent_usd), tokens: session.spent_tokens });
    marks.setUsage(session.usage);
    marks.setUnseen(session.unseen_edits);
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
      this.writes.reportError(error);
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
      this.writes.reportError(error);
    }
  }
}

function changedIds(before, after) {
  const old = new Map(before.subtasks.map((subtask) => [subtask.id, JSON.stringify(subtask)]));
  return after.subtasks
    .filter((subtask) => old.get(subtask.id) !== JSON.stringify(subtask))
    .map((subtask) => subtask.id);
}

loadStrings();
const page = JSON.parse(document.getElementById("pb-page").textContent);
// Exposed for debugging in the console and for the browser tests.
const sessionPage = new SessionPage(page);
window.planboard = sessionPage;
setUpAnswerers(page.session.id, page.answerers || []);
sessionPage.onToolsets = setUpSessionTools(page.session.id, page.session.toolsets || []);
