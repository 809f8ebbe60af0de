"""External tools: MCP servers (toolsets), the tools they offer, people's own credentials for
them, and which sessions use which."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from planboard.models.limits import NAME_MAX
from planboard.models.teams import Team
from planboard.secret_fields import EncryptedJSONField, EncryptedTextField

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

    # A string: sessions come later in the dependency order (a profile names toolsets).
    session = models.ForeignKey("ChatSession", on_delete=models.CASCADE, related_name="toolsets")
    toolset = models.ForeignKey(Toolset, on_delete=models.CASCADE, related_name="sessions")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session_id", "toolset_id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "toolset"], name="unique_session_toolset")
        ]

    def __str__(self) -> str:
        return f"session {self.session_id} uses toolset {self.toolset_id}"
