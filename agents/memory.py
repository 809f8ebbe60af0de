"""What the worker driving a run remembers between its steps, so a step reads only what changed.

Without it every step re-read the whole transcript, re-counted its tokens, rescanned every
tool-call id of the session and looked up the previous step, the session's runs and the
step number: the cost of a step grew with the conversation (docs/PERFORMANCE.md, benchmark 4).

Only facts that cannot change behind the driving worker's back are kept: messages are never
edited (only added), the run's own steps and answers are written by the worker holding its
lease, and a session has one active run at a time. What people change — the plan, the
session's settings, new messages — is still read from the database before every step. A
`RunMemory` lives for one `agents.loop._drive`; a run taken over by another worker starts
with an empty one and reads everything afresh.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

from agents.models import AgentStep
from planboard import selectors
from planboard.models import AgentRun, Message


@dataclass
class StepRecord:
    """A completed model call of the run, as far as the next hint needs it."""

    nudged: bool
    tool_names: list[str]


@dataclass
class RunMemory:
    run_id: int
    session_id: int
    # The session's messages, oldest first, and the ids among them.
    messages: list[Message] = field(default_factory=list)
    message_ids: set[int] = field(default_factory=set)
    # Whether `messages` is the whole transcript (read at least once by `transcript`).
    transcript_read: bool = False
    # Every tool-call id the session has used (answers' calls and stored results).
    call_ids: set[str] = field(default_factory=set)
    # Token counts of transcript blocks, by the ids of the messages in them.
    block_tokens: dict[tuple[int, ...], int] = field(default_factory=dict)
    # The plan (id, version) the session's previous completed model call was shown; None
    # before any; unknown until first read.
    last_shown: tuple[int | None, int | None] | None = None
    last_shown_known: bool = False
    own_run_ids: set[int] | None = None
    steps: list[StepRecord] | None = None
    next_step_number: int | None = None
    # (plan id, version) through which this worker last marked people's changes as seen.
    marked_through: tuple[int, int] | None = None
    # The newest answer of the run whose tool calls all have results (stored by this worker).
    answered_answer_id: int | None = None
    # The newest answer this worker stored, and the newest message its model had been shown.
    last_answer: tuple[Message, int] | None = None
    # The agent profiles the hint offers. Staff rarely change them; a run sees a change at its
    # next drive, and a profile disabled meanwhile is refused when the agent names it.
    profiles: list[dict[str, str]] | None = None
    # (plan id, version) of the plan changes this run's tool calls made (and committed).
    made: set[tuple[int, int]] = field(default_factory=set)

    @classmethod
    def for_run(cls, run: AgentRun) -> RunMemory:
        memory = cls(run_id=run.pk, session_id=run.session_id)
        if run.first_start:  # no step records yet: none to read back
            memory.steps, memory.next_step_number = [], 1
        return memory

    # --- the transcript ---------------------------------------------------------------------

    def transcript(self, *, messages: int | None = None) -> list[Message]:
        """The session's messages, oldest first. `messages`: how many the session has, just
        read; when this worker holds that many, it holds them all (a live session's messages
        are never deleted) and nothing is read. Else every id is read (exact even when a
        message with a smaller id commits late), whole rows only of the new ones."""
        if messages is not None and messages == len(self.message_ids):
            self.transcript_read = True
            return self.messages
        ids, added = selectors.transcript_since(session_id=self.session_id, known=self.message_ids)
        if added:
            for message in added:
                self.message_ids.add(message.pk)
                self.remember_calls(message)
            self.messages = sorted([*self.messages, *added], key=lambda m: m.pk)
        if len(self.messages) != len(ids):  # a message was deleted (the session was cleaned)
            present = set(ids)
            self.messages = [m for m in self.messages if m.pk in present]
            self.message_ids = {m.pk for m in self.messages}
        self.transcript_read = True
        return self.messages

    def remember_stored(self, message: Message) -> None:
        """A message this worker has just stored and committed: the next step's transcript read
        finds it known (no read of the whole row; messages are never edited)."""
        if message.pk in self.message_ids:
            return
        self.message_ids.add(message.pk)
        bisect.insort(self.messages, message, key=lambda m: m.pk)
        self.remember_calls(message)

    def remember_calls(self, message: Message) -> None:
        if message.tool_call_id:
            self.call_ids.add(message.tool_call_id)
        for call in message.tool_calls or []:
            self.call_ids.add(str(call.get("id", "")))

    def profile_choices(self, read: Callable[[], list[dict[str, str]]]) -> list[dict[str, str]]:
        if self.profiles is None:
            self.profiles = read()
        return self.profiles

    def plan_changes_made(self, changes: set[tuple[int, int]]) -> None:
        self.made |= changes

    def made_every_change(self, plan_id: int, after: int, through: int) -> bool:
        """Whether every version of the plan after `after` up to `through` is a change this
        run made itself (then no one else changed the plan in between)."""
        versions = range(after + 1, through + 1)
        return bool(versions) and all((plan_id, v) in self.made for v in versions)

    # --- the run's previous steps -------------------------------------------------------------

    def previous_shown(self) -> tuple[int | None, int | None] | None:
        """(plan id, plan version) the session's previous completed model call was shown."""
        if not self.last_shown_known:
            if self.transcript_read and all(
                m.role != Message.Role.ASSISTANT for m in self.messages
            ):
                # A completed call stores its answer in the same transaction: a session
                # without answers (a new conversation's first run) has none to ask for.
                self.last_shown = None
            else:
                self.last_shown = (
                    AgentStep.objects.filter(
                        run__session_id=self.session_id, status=AgentStep.Status.COMPLETED
                    )
                    .order_by("-id")
                    .values_list("plan_id", "plan_version")
                    .first()
                )
            self.last_shown_known = True
        return self.last_shown

    def session_run_ids(self) -> set[int]:
        if self.own_run_ids is None:
            self.own_run_ids = set(
                AgentRun.objects.filter(session_id=self.session_id).values_list("id", flat=True)
            )
        return self.own_run_ids

    def completed_steps(self) -> list[StepRecord]:
        """The run's completed model calls, newest first."""
        if self.steps is None:
            self.steps = [
                StepRecord(nudged=s.nudged, tool_names=s.tool_names)
                for s in AgentStep.objects.filter(
                    run_id=self.run_id, status=AgentStep.Status.COMPLETED
                ).order_by("-number")
            ]
        return self.steps

    def step_number(self) -> int:
        """The number of the run's next step record."""
        if self.next_step_number is None:
            last = (
                AgentStep.objects.filter(run_id=self.run_id)
                .order_by("-number")
                .values_list("number", flat=True)
                .first()
            )
            self.next_step_number = (last or 0) + 1
        number = self.next_step_number
        self.next_step_number += 1
        return number

    def step_completed(self, step: AgentStep, *, answer: Message) -> None:
        """A model call of this run completed and its answer is stored."""
        self.last_shown = (step.plan_id, step.plan_version)
        self.last_shown_known = True
        if self.steps is not None:
            self.steps.insert(0, StepRecord(nudged=step.nudged, tool_names=step.tool_names))
        self.remember_stored(answer)
        self.answered_answer_id = None
        self.last_answer = (answer, step.last_message_id or answer.pk)

    def calls_answered(self, answer: Message) -> None:
        """Every tool call of `answer` (the run's newest) has a stored result."""
        self.answered_answer_id = answer.pk
