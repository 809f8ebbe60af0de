"""The plan domain's tables.

Writes to these models go through `planboard.services` only; reads that build what users and
the agent see go through `planboard.selectors`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from planboard.secret_fields import EncryptedJSONField, EncryptedTextField

# Length limits shared by the services, the API serializers and the tool schemas.
NAME_MAX = 200
TEXT_MAX = 4000
MESSAGE_MAX = 20000
# A hard ceiling on plan size, whatever a session allows; protects every caller.
SUBTASKS_HARD_LIMIT = 1000


class State(models.TextChoices):
    """States shared by plans and subtasks."""

    TODO = "todo", "To do"
    IN_PROGRESS = "in_progress", "In progress"
    DONE = "done", "Done"
    ABANDONED = "abandoned", "Abandoned"


FINISHED_STATES = frozenset({State.DONE, State.ABANDONED})


class Team(models.Model):
    name = models.CharField(max_length=NAME_MAX, unique=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="TeamMembership", related_name="teams"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TeamMembership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", "Member"
        LEAD = "lead", "Lead"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="unique_team_membership")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class BudgetPeriod(models.TextChoices):
    DAY = "day", "Per day"
    WEEK = "week", "Per week"
    MONTH = "month", "Per month"


class AgentProfile(models.Model):
    """Who does a subtask: a model, extra instructions, the tools it may use, and its limits.

    A subtask may name a profile (`SubTask.agent`); while it is in progress each step uses that
    profile. A session has a default profile; with none, the settings' model is used.
    """

    name = models.SlugField(max_length=50, unique=True, help_text="Used in plans: `agent`.")
    title = models.CharField(max_length=NAME_MAX, blank=True, default="")
    description = models.TextField(blank=True, default="")
    model = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="Any litellm model string; empty uses PLANBOARD_LLM_MODEL.",
    )
    api_base = models.CharField(max_length=500, blank=True, default="")
    # A reference to a stored key, never the key: the name of the environment variable (or
    # secret mounted as one) that holds it.
    api_key_env = models.CharField(max_length=100, blank=True, default="")
    instructions = models.TextField(blank=True, default="")
    max_steps = models.PositiveIntegerField(null=True, blank=True)
    budget_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    budget_tokens = models.PositiveIntegerField(null=True, blank=True)
    # A limit per person and period, so starting new sessions does not reset what one person
    # may spend with this profile (counted in `ProfileUsage`).
    user_budget_period = models.CharField(
        max_length=5, choices=BudgetPeriod.choices, default=BudgetPeriod.MONTH
    )
    user_budget_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    user_budget_tokens = models.PositiveBigIntegerField(null=True, blank=True)
    # What the model costs when litellm does not know its price (US dollars per million
    # tokens); without either, a US-dollar budget cannot be kept and runs refuse to start.
    price_input_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True
    )
    price_output_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=4, null=True, blank=True
    )
    enabled = models.BooleanField(default=True)
    # The external toolsets this profile may use; none chosen = the session's toolsets.
    toolsets: models.ManyToManyField[Toolset, Any] = models.ManyToManyField(
        "Toolset",
        blank=True,
        related_name="profiles",
        help_text="Leave empty to use whatever toolsets the session enables.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.title or self.name


class ChatSession(models.Model):
    """A conversation between one user and the agent; holds at most one current plan."""

    class Language(models.TextChoices):
        AUTO = "auto", "Automatic"
        EN = "en", "English"
        ZH = "zh", "Chinese"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_sessions"
    )
    title = models.CharField(max_length=NAME_MAX, blank=True, default="")
    need_user_confirm = models.BooleanField(default=True)
    max_subtasks = models.PositiveIntegerField(null=True, blank=True)
    language = models.CharField(max_length=4, choices=Language.choices, default=Language.AUTO)
    current_plan = models.ForeignKey(
        "Plan", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The profile steps use when no subtask in progress names one (None: the settings' model).
    profile = models.ForeignKey(
        AgentProfile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Off: a plain tool-using chat, with no plan tools and no plan hint.
    plan_mode = models.BooleanField(default=True)
    budget_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    budget_tokens = models.PositiveIntegerField(null=True, blank=True)
    spent_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    spent_tokens = models.PositiveIntegerField(default=0)
    # People the owner names to answer what the session's runs wait for (approvals,
    # confirmations, questions): they see the session and its items in their inbox.
    answerers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="answerable_sessions"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        verbose_name = "chat session"

    def __str__(self) -> str:
        return self.title or f"Session {self.pk}"


class Plan(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="plans"
    )
    session = models.ForeignKey(
        ChatSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="plans"
    )
    name = models.CharField(max_length=NAME_MAX)
    description = models.TextField(blank=True, default="")
    expected_outcome = models.TextField(blank=True, default="")
    state = models.CharField(max_length=12, choices=State.choices, default=State.TODO)
    outcome = models.TextField(blank=True, default="")
    # Increases by exactly one with every committed change; events carry it.
    version = models.PositiveIntegerField(default=0)
    # What the agent spent while this plan was current (usage is not plan content: changing it
    # bumps no version and makes no history event).
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    # Not a column: the subtasks in board order as the change that returned this instance left
    # them (set by `planboard.services`), so its caller can show the plan without reading it
    # back (`selectors.plan_snapshot_of`). None: not known.
    written_subtasks: list[SubTask] | None = None

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "state"]),
            models.Index(fields=["state", "created_at"]),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_STATES


class SubTask(models.Model):
    """One step of a plan. `position` orders it; its id stays stable while indices shift."""

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="subtasks")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=NAME_MAX)
    description = models.TextField(blank=True, default="")
    expected_outcome = models.TextField(blank=True, default="")
    outcome = models.TextField(blank=True, default="")
    state = models.CharField(max_length=12, choices=State.choices, default=State.TODO)
    # The profile (`AgentProfile.name`) that does this subtask; empty: the session's.
    agent = models.CharField(max_length=50, blank=True, default="")
    # What the agent spent on the steps taken while this subtask was in progress.
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    tokens = models.PositiveIntegerField(default=0)
    # The ids of the subtasks of the same plan this one waits for, in board order. Only the
    # services write it, under the plan's lock: they refuse self-references, other plans' ids
    # and cycles, and drop a deleted subtask's id in the same transaction
    # (docs/design/plans.md says why a list and not a table).
    blocked_by = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["plan_id", "position"]
        indexes = [models.Index(fields=["plan", "position"])]
        constraints = [
            # The single-in-progress invariant, enforced by the database as a last line.
            models.UniqueConstraint(
                fields=["plan"],
                condition=Q(state="in_progress"),
                name="one_subtask_in_progress_per_plan",
            )
        ]

    def __str__(self) -> str:
        return self.name


class AgentRun(models.Model):
    """One execution of the agent for a session, from a user message to a final answer."""

    # Not a column: `services.run_start` sets it on the run it starts for the first time, which
    # has no step records yet (its driver reads none back).
    first_start: bool = False

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING_FOR_USER = "waiting_for_user", "Waiting for user"
        # Tool calls of the last answer wait for a person's approve/deny (`ToolCall`).
        WAITING_FOR_APPROVAL = "waiting_for_approval", "Waiting for approval"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING)
    # Paused, not finished: a person's answer or decision resumes the run.
    WAITING_STATUSES = (Status.WAITING_FOR_USER, Status.WAITING_FOR_APPROVAL)
    PAUSE_CONFIRM = "confirm"
    PAUSE_BUDGET = "budget"
    PAUSE_APPROVAL = "approval"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    cancel_requested = models.BooleanField(default=False)
    step_count = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The lease of the worker driving the run: renewed by a heartbeat while it works. Another
    # worker handed the same run (a broker redelivery) leaves it alone while the lease is live
    # and takes over once it has expired (the first worker died).
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    # Why a run waits: "confirm" (a plan to approve), "budget" (limit reached) or "approval"
    # (tool calls to decide).
    pause_reason = models.CharField(max_length=20, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # How many times the run has started waiting for the user: each wait is its own inbox
    # item (`run:<id>:<waits>`), with its own notifications and links.
    waits = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One active run per session.
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(status__in=["queued", "running"]),
                name="one_active_run_per_session",
            )
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES


class Message(models.Model):
    """The transcript: what the user, the agent and the tools said, in order."""

    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        TOOL = "tool", "Tool"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="messages")
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField(blank=True, default="")
    # Assistant messages: the tool calls the model asked for (OpenAI format).
    tool_calls = models.JSONField(null=True, blank=True)
    # Tool messages: which call this answers, and the tool's name.
    tool_call_id = models.CharField(max_length=100, blank=True, default="")
    tool_name = models.CharField(max_length=100, blank=True, default="")
    # For an assistant answer that was streamed: the id its `message.delta` events carried,
    # so clients replace the partial text with this stored message.
    answer_id = models.CharField(max_length=64, blank=True, default="")
    # A person's message: the MCP resources they attached (`{toolset_id, toolset, uri,
    # name}` each), read by the run from the servers (`attachment` messages).
    attachments = models.JSONField(null=True, blank=True)
    # Stored by the run: the contents (`content`) of one resource a person attached, as data
    # from its server: `{toolset_id, toolset, uri, name, of_message, ok, fence}`. Its
    # `tool_call_id` is `attach:<message id>:<index>`, so it is stored once.
    attachment = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A person's message: when an agent's step first read it (the chat shows it as seen), and
    # which run's step that was.
    seen_at = models.DateTimeField(null=True, blank=True)
    seen_in_run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    seen_at_step = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # A tool call is answered at most once: this makes tool execution idempotent.
            models.UniqueConstraint(
                fields=["session", "tool_call_id"],
                condition=~Q(tool_call_id=""),
                name="one_result_per_tool_call",
            )
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"


class PlanEvent(models.Model):
    """One committed change to a plan: the plan's history, and what the board applies."""

    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="events")
    version = models.PositiveIntegerField()
    action = models.CharField(max_length=40)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    actor_run = models.ForeignKey(AgentRun, null=True, blank=True, on_delete=models.SET_NULL)
    subtask_id = models.BigIntegerField(null=True, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    # What a client applies to the snapshot at `version - 1` to get the one at `version`.
    patch = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    # When an agent first received this change in a hint (people's changes only; the agent's
    # own need no telling): the run and step that saw it, and how many model calls finished
    # after the change without seeing it (they were already under way).
    seen_at = models.DateTimeField(null=True, blank=True)
    seen_in_run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    seen_at_step = models.PositiveIntegerField(null=True, blank=True)
    seen_after_steps = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["plan_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "version"], name="unique_plan_event_version")
        ]
        indexes = [
            # The per-step look-up of changes no agent has seen yet stays small.
            models.Index(
                fields=["plan", "version"],
                condition=models.Q(seen_at__isnull=True, actor_run__isnull=True),
                name="plan_event_unseen",
            )
        ]

    def __str__(self) -> str:
        return f"{self.plan_id} v{self.version} {self.action}"


class PlanFork(models.Model):
    """A session that continues a plan from its history ("continue from here"): the new
    session and its plan, where they came from, and what the new session's agent is told of
    the work done before. The source side reads its forks through `source_plan` (the source
    plan itself never changes)."""

    session = models.OneToOneField(ChatSession, on_delete=models.CASCADE, related_name="fork")
    plan = models.OneToOneField(Plan, on_delete=models.CASCADE, related_name="forked_from")
    source_plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    source_session = models.ForeignKey(
        ChatSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    source_version = models.PositiveIntegerField()
    # Kept as text: the names stay readable after the source is deleted.
    source_name = models.CharField(max_length=NAME_MAX, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The source's changes up to `source_version` as the hint lists changes (subtask ids
    # mapped to the new plan's), the newest `FORK_ACCOUNT_EVENTS` of them:
    # {"events": [...], "earlier": <how many older ones are left out>}.
    account = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"session {self.session_id} from plan {self.source_plan_id} v{self.source_version}"


# --- external tools (MCP servers) -------------------------------------------------------------

# A toolset's name prefixes its tools' names for the model (`<toolset>__<tool>`): it never
# contains "__", so the first "__" of a namespaced name always ends the toolset's part.
TOOLSET_NAME_MAX = 30
# Model providers accept function names of at most 64 characters: [A-Za-z0-9_-].
TOOL_NAME_MAX = 128


class Toolset(models.Model):
    """An MCP server the agent may call tools of: a program started over stdio (staff only)
    or a streamable-HTTP endpoint. `env` and `headers` hold secret values: they are written,
    never shown back (the API and admin show their names only)."""

    class Kind(models.TextChoices):
        STDIO = "stdio", "Program (stdio)"
        HTTP = "http", "HTTP endpoint"
        # Shipped with Planboard and run in-process (the session workspace); never created
        # through the API: `services.toolset_ensure_workspace` makes it.
        BUILTIN = "builtin", "Built into Planboard"

    class Access(models.TextChoices):
        SHARED = "shared", "Shared: the toolset's own credentials, for everyone"
        PER_PERSON = "per_person", "Per person: each person connects their own"

    class Auth(models.TextChoices):
        HEADERS = "headers", "Static headers (or none)"
        OAUTH = "oauth", "OAuth: people connect an account at the server's provider"

    class Roots(models.TextChoices):
        NONE = "none", "None: the server works in the folders it was started with"
        WORKSPACE = "workspace", "The session's workspace: its files, as a folder tree"

    name = models.SlugField(max_length=TOOLSET_NAME_MAX, unique=True)
    title = models.CharField(max_length=NAME_MAX, blank=True, default="")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    command = models.CharField(max_length=500, blank=True, default="")
    args = models.JSONField(default=list, blank=True)
    # Encrypted at rest (planboard/secret_fields.py): secret values, and a URL that may carry
    # credentials.
    env = EncryptedJSONField(default=dict, blank=True)
    url = EncryptedTextField(max_length=500, blank=True, default="")
    headers = EncryptedJSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    # Per person: calls in a session use its owner's `ToolsetCredential` (merged over the
    # toolset's env and headers); a session whose owner has none is not offered the tools.
    access = models.CharField(max_length=12, choices=Access.choices, default=Access.SHARED)
    # How calls authenticate to an HTTP server: its static `headers`, or OAuth 2.1 tokens
    # someone connected ("Connect", docs/TOOLS.md): for a shared toolset staff connect one
    # account (`oauth_tokens` here), for a per-person one each person their own
    # (`ToolsetCredential.oauth_tokens`). `oauth_client` is Planboard's registration at the
    # server's authorization server and what discovery found (one for everyone).
    auth = models.CharField(max_length=10, choices=Auth.choices, default=Auth.HEADERS)
    oauth_client = EncryptedJSONField(default=dict, blank=True)
    oauth_tokens = EncryptedJSONField(default=dict, blank=True)
    # What a stdio server asking for roots is given (docs/TOOLS.md, "Roots"): nothing (the
    # roots capability is not even declared, so a server keeps the folders it was started
    # with), or a folder tree of the chat session's files whose changes come back as Files.
    roots = models.CharField(max_length=10, choices=Roots.choices, default=Roots.NONE)
    # Empty: everyone may use it; otherwise members of these teams only.
    teams = models.ManyToManyField(Team, blank=True, related_name="toolsets")
    # What the server answered to tools/list at the last refresh, as received.
    tools_cache = models.JSONField(default=list, blank=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    # What else the server offered at the last refresh, cleaned and bounded
    # (`tool_listing.clean_catalog`): `resources`, resource `templates` and `prompts`, each a
    # list of dicts; a key's name in `truncated` when the server listed more than was kept.
    catalog = models.JSONField(default=dict, blank=True)
    # Why the last attempt to list its tools failed (the server unreachable, over a limit);
    # empty once a listing succeeds. Shown to staff where the toolset is configured.
    refresh_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        permissions = [
            # More than add/change: a stdio toolset is a command the workers run with their
            # own user's rights. No group gets it by default; superusers have it implicitly.
            ("run_stdio_toolset", "Can configure toolsets that run a program on the workers"),
        ]

    # Not a field: whose OAuth tokens a toolset object as called carries (None: the shared
    # ones), set by `selectors.toolset_as_called` so a refresh is stored where it belongs.
    oauth_user_id: int | None = None

    def __str__(self) -> str:
        return self.title or self.name


class ToolsetTool(models.Model):
    """One tool a toolset's server offers, and whether its calls need a person's approval."""

    class Policy(models.TextChoices):
        AUTO = "auto", "Run without asking"
        ASK = "ask", "Ask a person each time"
        NEVER = "never", "Never offer"

    toolset = models.ForeignKey(Toolset, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=TOOL_NAME_MAX)
    description = models.TextField(blank=True, default="")
    input_schema = models.JSONField(default=dict, blank=True)
    # The server's `readOnlyHint`: read-only tools run without asking by default.
    read_only = models.BooleanField(default=False)
    policy = models.CharField(max_length=10, choices=Policy.choices, default=Policy.ASK)
    # Set by staff: a refresh keeps this policy instead of deriving it from `read_only`.
    policy_overridden = models.BooleanField(default=False)
    # A hash of the description and input schema when a person last set the policy; a
    # refresh that finds them changed sets `needs_review` (and keeps the stricter policy).
    policy_fingerprint = models.CharField(max_length=64, blank=True, default="")
    needs_review = models.BooleanField(default=False)
    # Set by staff: a person approves its calls only in the app, signed in; a notification's
    # link (one click from a mailbox, past any sign-in protection) may deny but not approve.
    signed_in_only = models.BooleanField(default=False)
    # False once the server stopped listing it (kept so a staff override survives).
    available = models.BooleanField(default=True)
    # Why Planboard does not offer the tool although the server lists it (e.g. it runs only
    # as a 2025-11-25 MCP task); empty: offered.
    unsupported = models.CharField(max_length=300, blank=True, default="")
    # Planboard's own tool, not the server's: reads one of the server's resources
    # (`resources/read`), added by a refresh while the server lists resources.
    reads_resources = models.BooleanField(default=False)

    class Meta:
        ordering = ["toolset_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["toolset", "name"], name="unique_tool_per_toolset")
        ]

    def __str__(self) -> str:
        return f"{self.toolset_id}:{self.name}"


class ToolsetCredential(models.Model):
    """One person's own key or account for a per-person toolset: its env and headers are
    merged over the toolset's when that person's sessions call the server. Encrypted at rest;
    set by the person themself, never read back (names only)."""

    toolset = models.ForeignKey(Toolset, on_delete=models.CASCADE, related_name="credentials")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="toolset_credentials"
    )
    env = EncryptedJSONField(default=dict, blank=True)
    headers = EncryptedJSONField(default=dict, blank=True)
    # An OAuth toolset: this person's tokens (empty until they connect, and again once the
    # provider refused to refresh them).
    oauth_tokens = EncryptedJSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["toolset_id", "user_id"]
        constraints = [
            models.UniqueConstraint(fields=["toolset", "user"], name="one_credential_per_person")
        ]

    def __str__(self) -> str:
        return f"{self.toolset_id}:{self.user_id}"


class SessionToolset(models.Model):
    """A toolset a chat session lets its agent use (chosen by the session's owner)."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="toolsets")
    toolset = models.ForeignKey(Toolset, on_delete=models.CASCADE, related_name="sessions")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session_id", "toolset_id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "toolset"], name="unique_session_toolset")
        ]

    def __str__(self) -> str:
        return f"session {self.session_id} uses toolset {self.toolset_id}"


class ToolCall(models.Model):
    """One call of an external tool the model asked for: the decision on it and its fate.

    pending -> approved | denied (a person decides; `auto` tools start approved) ->
    running (committed before the server is called) -> succeeded | failed, or interrupted
    (found running after its worker died, and not safe to repeat).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for approval"
        APPROVED = "approved", "Approved"
        DENIED = "denied", "Denied"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        INTERRUPTED = "interrupted", "Interrupted"
        # Its server answered `input_required` (MCP 2026-07-28): the call is sent again once
        # people answered its questions (`InputRound`); nothing runs meanwhile.
        INPUT = "input", "Waiting for input"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="tool_calls")
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="tool_calls"
    )
    tool_call_id = models.CharField(max_length=100)
    # The name the model used (`<toolset>__<tool>`), and its two parts.
    tool_name = models.CharField(max_length=200)
    toolset = models.ForeignKey(
        Toolset, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls"
    )
    tool = models.CharField(max_length=TOOL_NAME_MAX)
    arguments = models.JSONField(default=dict, blank=True)
    # The tool's read-only hint when the call was made: only such calls are ever repeated.
    read_only = models.BooleanField(default=False)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    note = models.TextField(blank=True, default="")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    # Through which channel the decision came (`Decision.Channel`); empty while undecided.
    decided_via = models.CharField(max_length=12, blank=True, default="")
    # Approved with "always allow": later calls of this tool in this session need no approval.
    always_allow = models.BooleanField(default=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # A call the server runs as an MCP task (`agents.mcp.tasks`): the task's id, stored once it
    # is made (a worker that takes the run over polls it from there), and what the server last
    # said of it: its status and its status message (its progress, in the server's words).
    task_id = models.CharField(max_length=200, blank=True, default="")
    task_status = models.CharField(max_length=20, blank=True, default="")
    task_message = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "tool_call_id"], name="one_record_per_tool_call"
            )
        ]
        indexes = [models.Index(fields=["run", "status"])]

    # Not a field: set on a claimed call of a toolset's `read_resource` (Planboard's own tool,
    # `ToolsetTool.reads_resources`), which reads a resource instead of calling a tool.
    reads_resource: bool = False
    # Not a field: set on a call claimed to be sent again after its `input_required` round
    # was answered (`services.tool_call_resume_input`): `responses`, `state`, `rounds`.
    resumes_input: dict[str, Any] | None = None

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.status})"


class Elicitation(models.Model):
    """A question an MCP server asked a person in the middle of a tool call
    (`elicitation/create`): a form built from the server's `requested_schema`, or a
    URL the person is asked to open. The call waits (without holding anything of the
    database) until someone who may answer the session accepts, declines or cancels it, or
    until `expires_at` (then the server is told `decline`).

    pending -> accepted | declined | cancelled (a person answered; or the run was cancelled)
    | expired (nobody answered in time).
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for an answer"
        ACCEPTED = "accepted", "Accepted"
        DECLINED = "declined", "Declined"
        CANCELLED = "cancelled", "Cancelled"
        EXPIRED = "expired", "Expired"

    class Mode(models.TextChoices):
        FORM = "form", "Form"
        URL = "url", "Open a URL"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="elicitations")
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="elicitations"
    )
    tool_call = models.ForeignKey(
        ToolCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="elicitations"
    )
    toolset = models.ForeignKey(
        Toolset, null=True, blank=True, on_delete=models.SET_NULL, related_name="elicitations"
    )
    # The toolset's name when it asked (kept if the toolset is removed).
    toolset_name = models.CharField(max_length=NAME_MAX, blank=True, default="")
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.FORM)
    # The server's words and schema: data, never markup.
    message = models.TextField(blank=True, default="")
    requested_schema = models.JSONField(default=dict, blank=True)
    url = models.TextField(blank=True, default="")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    # What the person sent with "accept" (checked against the schema).
    content = models.JSONField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Through which channel the answer came (`Channel`); empty while pending or without one.
    answered_via = models.CharField(max_length=12, blank=True, default="")
    answered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    # Asked in an `input_required` result (MCP 2026-07-28) rather than mid-call: the round it
    # belongs to, and the server's key for it (its answer goes back under that key).
    input_round = models.ForeignKey(
        "InputRound", null=True, blank=True, on_delete=models.CASCADE, related_name="questions"
    )
    input_key = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "status"])]

    def __str__(self) -> str:
        return f"elicitation {self.pk} ({self.status})"


class InputRound(models.Model):
    """A tool call's server answered `input_required` (MCP 2026-07-28): it needs people's
    answers (`questions`, elicitations like any other) before the call is sent again. What
    the server asked to be sent back with them (its opaque `requestState`, and responses
    Planboard gave without a person) is `carried`, encrypted at rest, used once: the claim
    that sends the call again consumes it in the same transaction and erases it. It waits at
    most until `expires_at`; `number` counts the call's rounds, this one included.

    waiting -> consumed (sent back) | expired (nobody answered in time) | void (the call
    ended otherwise: the run was cancelled, the call failed).
    """

    class Status(models.TextChoices):
        WAITING = "waiting", "Waiting for answers"
        CONSUMED = "consumed", "Sent back"
        EXPIRED = "expired", "Expired"
        VOID = "void", "Void"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    tool_call = models.ForeignKey(ToolCall, on_delete=models.CASCADE, related_name="input_rounds")
    number = models.PositiveIntegerField(default=1)
    # {"state": the server's requestState or null, "ready": {key: response}}; null once used.
    carried = EncryptedJSONField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WAITING)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["status", "expires_at"])]

    def __str__(self) -> str:
        return f"input round {self.number} of call {self.tool_call_id} ({self.status})"


# --- files the agent produces -----------------------------------------------------------------

# A workspace path: ASCII segments joined by "/" (see `planboard.workspace.clean_path`).
WORKSPACE_PATH_MAX = 200


class WorkspaceFile(models.Model):
    """A file in a session's workspace, written by the agent (the `workspace` toolset). Its
    bytes live in Django's default storage under `storage_name` (never derived from `path`,
    so a path can never reach outside the session's files); each write stores a new blob."""

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=WORKSPACE_PATH_MAX)
    storage_name = models.CharField(max_length=300, unique=True)
    size = models.PositiveIntegerField(default=0)
    # The run whose agent last wrote it.
    produced_by = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="files"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["session_id", "path"]
        constraints = [
            models.UniqueConstraint(fields=["session", "path"], name="unique_workspace_path")
        ]

    def __str__(self) -> str:
        return f"{self.path} (session {self.session_id})"


class ProfileUsage(models.Model):
    """What one person spent with one agent profile on one day (UTC, `period_start`); a
    budget period's spending is the sum of its days, so changing the period counts right."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile_usage"
    )
    profile = models.ForeignKey(AgentProfile, on_delete=models.CASCADE, related_name="usage")
    period_start = models.DateField()
    spent_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    spent_tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "profile", "period_start"], name="unique_profile_usage_period"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.profile_id} from {self.period_start}"


# --- what waits on people: decisions, the inbox, notifications, action links ------------------


class Channel(models.TextChoices):
    """How a person's decision reached us."""

    BROWSER = "browser", "Browser"
    API = "api", "API"
    EMAIL = "email", "Email link"
    WEBHOOK = "webhook", "Webhook link"
    EXPIRY = "expiry", "Expired link"
    ADMIN = "admin", "Admin"


class Decision(models.Model):
    """The record of who answered something a run waited for, when, and how."""

    class Kind(models.TextChoices):
        APPROVAL = "approval", "Tool approval"
        CONFIRMATION = "confirmation", "Plan confirmation"
        BUDGET = "budget", "Budget pause"
        QUESTION = "question", "Question"
        ELICITATION = "elicitation", "A tool's question"

    class Choice(models.TextChoices):
        APPROVE = "approve", "Approved"
        DENY = "deny", "Denied"
        ALWAYS_ALLOW = "always_allow", "Always allowed"
        CONFIRM = "confirm", "Confirmed"
        RAISE_BUDGET = "raise_budget", "Raised the budget"
        REPLY = "reply", "Replied"
        ACCEPT = "accept", "Accepted"
        DECLINE = "decline", "Declined"
        CANCEL = "cancel", "Cancelled"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="decisions")
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    tool_call = models.ForeignKey(
        ToolCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    elicitation = models.ForeignKey(
        Elicitation, null=True, blank=True, on_delete=models.SET_NULL, related_name="decisions"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    decision = models.CharField(max_length=20, choices=Choice.choices)
    # None: nobody decided (an expired link denies on its own).
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    channel = models.CharField(max_length=12, choices=Channel.choices)
    # A short description of what was decided (tool name, plan name, new limit).
    summary = models.CharField(max_length=NAME_MAX, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "id"])]

    def __str__(self) -> str:
        return f"{self.kind} {self.decision} via {self.channel}"


class InboxSnooze(models.Model):
    """ "Not now": one person hides one inbox item until a time, without deciding it."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="inbox_snoozes"
    )
    item_key = models.CharField(max_length=100)
    until = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "item_key"], name="one_snooze_per_item")
        ]

    def __str__(self) -> str:
        return f"{self.item_key} for {self.user_id} until {self.until}"


class NotificationSettings(models.Model):
    """What one person wants to hear about outside the app, where, and after what delay."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_settings"
    )
    # Inbox item kinds (`Decision.Kind` values) that notify; empty: none.
    kinds = models.JSONField(default=list, blank=True)
    email = models.BooleanField(default=False)
    webhook_url = models.CharField(max_length=500, blank=True, default="")
    # The HMAC-SHA256 key of the webhook's signature header; never shown back in full, and
    # encrypted at rest like toolsets' secrets (a dump must not let anyone forge deliveries).
    webhook_secret = EncryptedTextField(max_length=100, blank=True, default="")
    # Nothing is sent when the item is answered within this many seconds.
    delay_seconds = models.PositiveIntegerField(default=300)
    updated_at = models.DateTimeField(auto_now=True)

    class NamedBy(models.TextChoices):
        ANYONE = "anyone", "Anyone"
        TEAM = "team", "People who share a team with me"
        NOBODY = "nobody", "Nobody"

    # Who may name this person to answer their sessions (consent; docs/INBOX.md, "Trust
    # model of answerers"). Teammates by default: an inbox is not open to strangers.
    named_by = models.CharField(max_length=10, choices=NamedBy.choices, default=NamedBy.TEAM)

    def __str__(self) -> str:
        return f"notifications of {self.user_id}"


class Notification(models.Model):
    """The outbox: one message about one item to one person over one channel. A row is made
    once (unique), sent by a Celery task that claims it first, so a retry never sends twice
    and a lost worker's row is sent by the next attempt."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to be sent"
        SENDING = "sending", "Being sent"
        SENT = "sent", "Sent"
        SKIPPED = "skipped", "Answered before it was sent"
        FAILED = "failed", "Failed"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="notifications")
    item_key = models.CharField(max_length=100)
    kind = models.CharField(max_length=20)
    channel = models.CharField(max_length=12, choices=Channel.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    send_after = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "item_key", "channel"], name="one_notification_per_item"
            )
        ]
        indexes = [models.Index(fields=["status", "send_after"])]

    def __str__(self) -> str:
        return f"{self.channel} to {self.user_id} about {self.item_key} ({self.status})"


class ActionLink(models.Model):
    """A signed link that makes one decision on one item for one person, once, before it
    expires. The URL carries `token`; only its SHA-256 is stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="action_links"
    )
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="action_links")
    item_key = models.CharField(max_length=100)
    decision = models.CharField(max_length=20)
    channel = models.CharField(max_length=12, choices=Channel.choices)
    token_hash = models.CharField(max_length=64, unique=True)
    # A confirmation's plan as the message showed it: a link confirms that revision only.
    plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    plan_version = models.PositiveIntegerField(null=True, blank=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    # What using (or the expiry of) the link did: decided, expired, already_decided (a
    # decision on the item, through any channel, spends everyone's links), changed, refused.
    outcome = models.CharField(max_length=20, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["expires_at"], condition=Q(used_at__isnull=True), name="action_link_open"
            ),
            # A decision spends the open links of its item.
            models.Index(
                fields=["item_key"], condition=Q(used_at__isnull=True), name="action_link_open_item"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision} {self.item_key} for {self.user_id}"


class PlanTemplate(models.Model):
    """A plan's text and subtasks kept to start new sessions from: never states, outcomes or
    history. Owned by a person; shared with one of the owner's teams when `team` is set.

    `subtasks` is a JSON list of `shapes.TemplateSubtask` (`planboard/plan_templates.py`
    cleans it): a template is saved, edited and copied whole, so its subtasks need no rows,
    ids or locks of their own (docs/design/templates.md).
    """

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="plan_templates"
    )
    team = models.ForeignKey(
        Team,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="plan_templates",
        help_text="Shared with this team's members; empty: only the owner (and staff) see it.",
    )
    name = models.CharField(max_length=NAME_MAX)
    description = models.TextField(blank=True, default="")
    expected_outcome = models.TextField(blank=True, default="")
    subtasks = models.JSONField(default=list, blank=True)
    # The plan it was saved from, for reference only: the template never follows it.
    source_plan = models.ForeignKey(
        Plan, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        verbose_name = "plan template"
        indexes = [models.Index(fields=["owner", "name"]), models.Index(fields=["team", "name"])]

    def __str__(self) -> str:
        return self.name


class Schedule(models.Model):
    """A message the owner has sent for them on a schedule (docs/SCHEDULES.md): each
    occurrence posts it as the owner, which starts an ordinary run.

    The target is exactly one of `session` (each occurrence posts into that session) and
    `template` (each occurrence starts a new session of the owner from the template, its plan
    drafted, and posts there); the database refuses a row with both or neither."""

    class Kind(models.TextChoices):
        CRON = "cron", "Cron expression"
        HOURS = "hours", "Every N hours"
        DAYS = "days", "Every N days at a time"

    class Paused(models.TextChoices):
        NO = "", "Running"
        BY_PERSON = "person", "Paused by a person"
        FAILURES = "failures", "Paused after failures in a row"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="schedules"
    )
    session = models.ForeignKey(
        ChatSession, null=True, blank=True, on_delete=models.CASCADE, related_name="schedules"
    )
    template = models.ForeignKey(
        PlanTemplate, null=True, blank=True, on_delete=models.CASCADE, related_name="schedules"
    )
    name = models.CharField(max_length=NAME_MAX, blank=True, default="")
    message = models.TextField()
    kind = models.CharField(max_length=8, choices=Kind.choices)
    cron = models.CharField(max_length=100, blank=True, default="")
    every = models.PositiveIntegerField(null=True, blank=True)
    # Local wall-clock time in `timezone` ("days"; "hours" counts from it on `starts_on`).
    at_time = models.TimeField(null=True, blank=True)
    starts_on = models.DateField(null=True, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    enabled = models.BooleanField(default=True)
    paused_reason = models.CharField(
        max_length=10, choices=Paused.choices, blank=True, default=Paused.NO
    )
    # The schedule pauses itself after this many failed occurrences in a row.
    max_failures = models.PositiveIntegerField(default=3)
    failures_in_a_row = models.PositiveIntegerField(default=0)
    # The next time it is due (None while paused); the sweep fires what is due by now.
    next_due_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["next_due_at"], condition=Q(enabled=True), name="schedule_due")
        ]
        constraints = [
            models.CheckConstraint(
                condition=(
                    Q(session__isnull=False, template__isnull=True)
                    | Q(session__isnull=True, template__isnull=False)
                ),
                name="schedule_one_target",
            )
        ]

    def __str__(self) -> str:
        return self.name or f"Schedule {self.pk}"


class ScheduleOccurrence(models.Model):
    """One due time of a schedule and what became of it. Unique per (schedule, due time):
    however often beat nudges or a task is redelivered, a due time is claimed once."""

    class Status(models.TextChoices):
        FIRED = "fired", "Started a run"
        SUCCEEDED = "succeeded", "Its run succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Its run was cancelled"
        SKIPPED = "skipped", "Skipped: the previous run had not finished"
        MISSED = "missed", "Missed: the scheduler was not running"

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="occurrences")
    due_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=Status.choices)
    run = models.ForeignKey(
        AgentRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Why it was skipped or failed, in words for people.
    detail = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-due_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["schedule", "due_at"], name="one_occurrence_per_due_time"
            )
        ]
        indexes = [
            models.Index(fields=["status"], condition=Q(status="fired"), name="occurrence_fired")
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} at {self.due_at:%Y-%m-%d %H:%M} ({self.status})"
