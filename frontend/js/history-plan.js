// The plan review page: the final board, the session's transcript, and a timeline of every
// change that replays the plan step by step (empty plan + each event's patch in turn).
// A long history is embedded as its newest changes, replayed from the board before them
// (`events_base`); the rest is fetched from the REST API on request.

import { allPlanEvents, api, messagesBefore } from "./api.js";
import { replay } from "./board-state.js";
import { BoardView } from "./board.js";
import { ChatView } from "./chat.js";
import { h, icon, iconButton, replaceChildren } from "./dom.js";
import { formatTime, formatWhen, loadStrings, t } from "./i18n.js";
import { initTabs } from "./tabs.js";
import { toastError } from "./toast.js";
import { actorLabel, describeEvent, eventDetail, seenDetail } from "./timeline.js";

/** @typedef {import("./types.js").PlanSnapshot} PlanSnapshot */
/** @typedef {import("./types.js").PlanEvent} PlanEvent */

const PLAY_STEP_MS = 1100;

class PlanReview {
  constructor(page) {
    /** @type {PlanSnapshot} */
    this.finalPlan = page.plan;
    this.usage = page.usage || null;
    // Who answered what the runs waited for while this plan was current (oldest first).
    this.decisions = page.decisions || [];
    this.setHistory(page.events, page.events_base, page.earlier_events || 0);
    this.timer = null;

    initTabs(document.getElementById("review-side"), "timeline");
    this.board = new BoardView(document.getElementById("board"), {
      editable: false,
      emptyMessage: t("replay_empty"),
    });
    // What each subtask's work cost (the final totals, shown at every replay step).
    this.board.marks.setUsage(this.usage);
    const chat = new ChatView(document.getElementById("transcript"), { transcriptOnly: true });
    chat.setMessages(page.messages);
    if (page.earlier_messages && page.session_id) {
      chat.offerEarlier((firstId) => messagesBefore(page.session_id, firstId));
    }

    this.caption = document.getElementById("replay-caption");
    this.forkUrl = page.fork_url || null;
    this.forkButton = /** @type {HTMLButtonElement | null} */ (
      document.getElementById("fork-here")
    );
    if (this.forkButton) this.forkButton.addEventListener("click", () => this.continueHere());
    this.buildControls(document.getElementById("replay-controls"));
    this.list = document.getElementById("timeline");
    this.buildTimeline();
    if (this.broken) {
      this.caption.textContent = t("replay_broken");
      this.board.render(this.finalPlan);
    } else {
      this.show(this.step, { highlight: false });
    }
  }

  /**
   * @param {PlanEvent[]} events
   * @param {PlanSnapshot | null} base
   * @param {number} earlier
   */
  setHistory(events, base, earlier) {
    this.events = events;
    this.earlier = earlier;
    try {
      this.snapshots = replay(this.finalPlan, events, base);
      this.broken = false;
    } catch (error) {
      // A gap in the history: show what can be replayed, then the stored final plan.
      console.error(error);
      this.snapshots = [this.finalPlan];
      this.broken = true;
    }
    this.step = this.snapshots.length - 1;
  }

  async loadWholeHistory(button) {
    button.disabled = true;
    try {
      this.stop();
      this.setHistory(await allPlanEvents(this.finalPlan.id), null, 0);
      this.buildControls(document.getElementById("replay-controls"));
      this.buildTimeline();
      this.rendered = false;
      this.show(this.lastStep, { highlight: false });
    } catch (error) {
      console.error(error);
      button.disabled = false;
    }
  }

  get lastStep() {
    return this.snapshots.length - 1;
  }

  buildControls(container) {
    const control = iconButton;
    this.firstButton = control("first", "first", t("replay_first"), () => this.goTo(0));
    this.prevButton = control("prev", "prev", t("replay_prev"), () => this.goTo(this.step - 1));
    this.playButton = control("play", "play", t("replay_play"), () => this.togglePlay());
    this.nextButton = control("next", "next", t("replay_next"), () => this.goTo(this.step + 1));
    this.lastButton = control("last", "last", t("replay_last"), () => this.goTo(this.lastStep));
    this.slider = h("input", {
      type: "range",
      min: 0,
      max: this.lastStep,
      value: this.step,
      "aria-label": t("replay_position"),
      class: "replay-slider",
    });
    this.slider.addEventListener("input", () => this.goTo(Number(this.slider.value)));
    this.position = h("span", { class: "replay-position", "aria-live": "polite" });
    replaceChildren(
      container,
      h(
        "div",
        { class: "replay-buttons" },
        this.firstButton,
        this.prevButton,
        this.playButton,
        this.nextButton,
        this.lastButton,
      ),
      this.slider,
      this.position,
    );
    if (this.broken) for (const element of container.querySelectorAll("button, input")) {
      element.disabled = true;
    }
  }

  buildTimeline() {
    const items = [
      this.timelineItem(0, {
        version: `v${this.earlier}`,
        who: "",
        text: this.earlier ? t("replay_window_start", { count: this.earlier }) : t("replay_start"),
        when: "",
        kind: "system",
      }),
    ];
    if (this.earlier) {
      const more = h("button", {
        type: "button",
        class: "btn btn-small load-earlier",
        dataset: { action: "load-history" },
        text: t("replay_load_all", { count: this.earlier }),
      });
      more.addEventListener("click", () => this.loadWholeHistory(more));
      items.unshift(h("li", { class: "tl-earlier" }, more));
    }
    const decisions = [...this.decisions];
    const decisionsUntil = (when) => {
      while (decisions.length && (!when || decisions[0].created_at <= when)) {
        items.push(decisionItem(decisions.shift()));
      }
    };
    this.events.forEach((event, position) => {
      const before = this.snapshots[position];
      const after = this.snapshots[position + 1] || this.finalPlan;
      decisionsUntil(event.created_at);
      items.push(
        this.timelineItem(position + 1, {
          version: `v${event.version}`,
          who: actorLabel(event.actor),
          kind: event.actor ? event.actor.kind : "system",
          text: before && after ? describeEvent(event, before, after) : event.action,
          detail: eventDetail(event),
          seen: seenDetail(event),
          when: event.created_at,
        }),
      );
    });
    decisionsUntil(null);
    replaceChildren(this.list, items);
  }

  timelineItem(step, { version, who, kind, text, detail = "", seen = "", when }) {
    const itemButton = h(
      "button",
      { type: "button", class: "tl-button", dataset: { step } },
      h("span", { class: "tl-version", text: version }),
      h(
        "span",
        { class: "tl-main" },
        h(
          "span",
          { class: "tl-line" },
          who ? h("span", { class: `tl-actor tl-actor-${kind}`, text: who }) : null,
          h("span", { class: "tl-text", text }),
        ),
        detail ? h("span", { class: "tl-detail", text: detail }) : null,
        seen ? h("span", { class: "tl-seen", text: seen }) : null,
      ),
      when
        ? h("time", {
            class: "tl-time",
            datetime: when,
            title: formatWhen(when, { absolute: true }),
            text: formatTime(when),
          })
        : null,
    );
    itemButton.addEventListener("click", () => {
      this.stop();
      this.goTo(step);
    });
    return h("li", { class: "tl-item", dataset: { step } }, itemButton);
  }

  goTo(step) {
    const clamped = Math.max(0, Math.min(this.lastStep, step));
    if (clamped === this.step && this.rendered) return;
    this.show(clamped);
  }

  show(step, { highlight = true } = {}) {
    this.step = step;
    this.rendered = true;
    const event = step > 0 ? this.events[step - 1] : null;
    const changed = event ? (event.patch.upsert || []).map((subtask) => subtask.id) : [];
    if (event && event.subtask_id !== null && event.subtask_id !== undefined) {
      changed.push(event.subtask_id);
    }
    const snapshot = this.snapshots[step];
    this.board.render(step === 0 ? null : snapshot, {
      flash: highlight ? changed : [],
      flashHead: highlight && Boolean(event && event.action.startsWith("plan_")),
    });
    this.slider.value = String(step);
    this.position.textContent = t("replay_step", { step, total: this.lastStep });
    this.caption.textContent =
      step === this.lastStep
        ? t("replay_final")
        : t("replay_after", { version: snapshot.version, total: this.lastStep });
    this.showForkButton(step === 0 ? null : snapshot.version);
    this.firstButton.disabled = this.prevButton.disabled = step === 0;
    this.nextButton.disabled = this.lastButton.disabled = step === this.lastStep;
    for (const item of /** @type {HTMLCollectionOf<HTMLElement>} */ (this.list.children)) {
      if (item.dataset.step === undefined) continue; // a decision: not a replay step
      const current = Number(item.dataset.step) === step;
      item.classList.toggle("is-current", current);
      item.classList.toggle("is-future", Number(item.dataset.step) > step);
      const itemButton = item.querySelector("button");
      if (current) itemButton.setAttribute("aria-current", "step");
      else itemButton.removeAttribute("aria-current");
      if (current) scrollWithin(this.list, item);
    }
  }

  /**
   * "Continue from here": offered at every version of the replay (not before the plan
   * existed, nor over a broken history).
   * @param {number | null} version
   */
  showForkButton(version) {
    if (!this.forkButton) return;
    this.forkVersion = version;
    this.forkButton.hidden = !this.forkUrl || version === null || this.broken;
    if (version !== null) this.forkButton.title = t("fork_here_title", { version });
  }

  async continueHere() {
    if (this.forkVersion === null || this.forkVersion === undefined) return;
    this.stop();
    this.forkButton.disabled = true;
    try {
      const made = await api("POST", this.forkUrl, { version: this.forkVersion });
      window.location.assign(made.url);
    } catch (error) {
      console.error(error);
      const reason = error instanceof Error ? error.message : String(error);
      toastError(t("fork_failed", { error: reason }));
      this.forkButton.disabled = false;
    }
  }

  togglePlay() {
    if (this.timer) return this.stop();
    if (this.step === this.lastStep) this.show(0);
    this.timer = setInterval(() => {
      if (this.step >= this.lastStep) return this.stop();
      this.show(this.step + 1);
    }, PLAY_STEP_MS);
    this.setPlayButton(true);
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
    this.setPlayButton(false);
  }

  setPlayButton(playing) {
    const label = t(playing ? "replay_pause" : "replay_play");
    replaceChildren(this.playButton, icon(playing ? "pause" : "play"));
    this.playButton.setAttribute("aria-label", label);
    this.playButton.title = label;
    this.playButton.setAttribute("aria-pressed", String(playing));
  }
}

/** Bring `item` into view inside `container` without scrolling the page itself. */
function scrollWithin(container, item) {
  const box = container.getBoundingClientRect();
  const target = item.getBoundingClientRect();
  if (target.top < box.top) container.scrollTop -= box.top - target.top;
  else if (target.bottom > box.bottom) container.scrollTop += target.bottom - box.bottom;
}

/** A decision in the timeline: who answered the agent, how, and through which channel. */
function decisionItem(decision) {
  const who = decision.user || t("decision_nobody");
  const text = t(`decision_${decision.decision}`, { summary: decision.summary });
  return h(
    "li",
    { class: "tl-item tl-decision", dataset: { decision: decision.decision } },
    h(
      "div",
      { class: "tl-decision-body" },
      h("span", { class: "tl-actor tl-actor-user", text: who }),
      h("span", { class: "tl-text", text: ` ${text} · ${t(`channel_${decision.channel}`)}` }),
    ),
    h("time", {
      class: "tl-time",
      datetime: decision.created_at,
      title: formatWhen(decision.created_at, { absolute: true }),
      text: formatTime(decision.created_at),
    }),
  );
}

loadStrings();
window.planboard = new PlanReview(JSON.parse(document.getElementById("pb-page").textContent));
