"""Django settings for Planboard.

Every knob comes from the environment (see `.env.example`). The defaults give the
embedded mode: a SQLite file, no Redis, an in-process worker and the offline demo model.
"""

from __future__ import annotations

import os
from datetime import timedelta
from ipaddress import ip_network
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=0")
    SECRET_KEY = "insecure-dev-key-only-for-local-embedded-mode"  # noqa: S105

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # self-hosted Swagger UI assets for /api/docs/
    "django_filters",
    "channels",
    "axes",
    "csp",
    "django_celery_beat",
    "planboard",
    "agents",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "planboard.security.ContentSecurityPolicyMiddleware",
    # DEBUG only (unloaded otherwise): the site's 404 page instead of Django's technical one.
    "planboard.web.not_found.BrandedNotFoundMiddleware",
    # Last, as axes asks: turns a lockout flagged during authentication into its page.
    "axes.middleware.AxesMiddleware",
]
# Under ASGI the chain and the view run in sync mode, one thread a request
# (`planboard.web_handler.OneThreadASGIHandler`, planboard/asgi.py).

ROOT_URLCONF = "planboard.urls"
ASGI_APPLICATION = "planboard.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database: SQLite file by default, PostgreSQL via DATABASE_URL -------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if not DATABASE_URL:
    (BASE_DIR / "var").mkdir(exist_ok=True)
    DATABASE_URL = f"sqlite:///{BASE_DIR / 'var' / 'planboard.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL, conn_max_age=int(os.environ.get("DJANGO_CONN_MAX_AGE", "0"))
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout let the web server and the in-process worker share the file.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    _pg_options = DATABASES["default"].setdefault("OPTIONS", {})
    # Server-side binding lets psycopg prepare the statements a connection repeats (every plan
    # change runs the same few), so PostgreSQL skips parsing and planning them again
    # (docs/PERFORMANCE.md). Turn it off behind a transaction-mode pgbouncer, which cannot
    # keep prepared statements.
    if env_bool("DJANGO_DB_SERVER_SIDE_BINDING", True):
        _pg_options.update({"server_side_binding": True, "prepare_threshold": 2})
    # A connection pool (Django's, psycopg_pool). The web process turns it on (planboard/asgi.py):
    # under ASGI each request runs in a fresh thread, so DJANGO_CONN_MAX_AGE reuses nothing and
    # every request would open a connection. Celery workers keep one connection per process.
    if env_bool("PLANBOARD_DB_POOL", False):
        _pg_options["pool"] = {
            "min_size": 2,
            "max_size": int(os.environ.get("PLANBOARD_DB_POOL_MAX_SIZE", "20")),
            "timeout": 10,
        }
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps them; Django's reuse must be off
# HTTP requests inside Django at once in the web process; a burst beyond waits its turn
# (planboard/web_handler.py). No more than the pool has connections, or a burst gets 503s.
PLANBOARD_WEB_CONCURRENCY = int(
    os.environ.get("PLANBOARD_WEB_CONCURRENCY", os.environ.get("PLANBOARD_DB_POOL_MAX_SIZE", "20"))
)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out client before any password is checked.
    "axes.backends.AxesStandaloneBackend",
    # Django's ModelBackend, its every-request read of the user written out (planboard/login.py).
    "planboard.login.UserBackend",
    # Reads the users of the sessions it signed in before the one above was listed.
    "django.contrib.auth.backends.ModelBackend",
]
# Django's database sessions, their every-request read written out (planboard/login.py).
SESSION_ENGINE = "planboard.login"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# --- i18n ------------------------------------------------------------------------------
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files: served by WhiteNoise, also under daphne with DEBUG=0 -------------
STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "frontend"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG

# --- Redis, Channels, Celery ---------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    # Throttle counters must be shared by every web process, or each one allows the full rate.
    # Note: cache.clear() flushes this whole Redis database (broker and channel layer too).
    CACHES = {
        "default": {
            "BACKEND": "planboard.cache.RedisCache",  # Django's, one client per pool
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "planboard",
        }
    }
    from redis.asyncio.retry import Retry as RedisRetry
    from redis.backoff import ExponentialBackoff

    # The pub/sub layer: each web process subscribes once per followed group and hands an
    # event to its local sockets, so a change is one PUBLISH per group however many people
    # watch (planboard/broadcast.py publishes synchronously in the same format). It keeps no
    # queue: an event published while Redis is away is lost, and clients resync on the gap.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                # redis-py never retries by default, so after a Redis restart every pooled
                # connection failed once: retry on a new one (the subscriber re-subscribes).
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": 15,
                        "retry": RedisRetry(ExponentialBackoff(cap=1.0, base=0.05), 3),
                    }
                ],
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL or "memory://")
if CELERY_BROKER_URL.split("://", 1)[0] in ("redis", "rediss"):
    # kombu's Redis transport, its client kept per connection pool (planboard/broker.py).
    CELERY_BROKER_TRANSPORT = "planboard.broker:Transport"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# One process per CPU this worker may use (`taskset` and container limits included): each
# process hosts many runs on its event loop (agents/runtime), so more processes than cores
# only cost memory. `celery -A planboard worker` with no flags is the production command.
CELERY_WORKER_CONCURRENCY = int(
    os.environ.get("PLANBOARD_WORKER_PROCESSES", "0") or len(os.sched_getaffinity(0))
)
# The queue runs are sent to and workers read (`-Q` picks others): several deployments may
# share one Redis by giving each its own name. Workers dispatch to it too (the lease sweep, a
# SIGTERM hand-off), so it must match the queue the workers consume.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("PLANBOARD_TASK_QUEUE", "") or "celery"
# The inbox's tasks (notification sends and the two sweeps) go to a queue of their own, so a
# slow webhook never holds a process a run needs: run workers (no -Q) consume only the default
# queue; a small notifier worker consumes this one (`make notifier`, docs/DEPLOYMENT.md).
PLANBOARD_NOTIFICATION_QUEUE = (
    os.environ.get("PLANBOARD_NOTIFICATION_QUEUE", "")
    or f"{CELERY_TASK_DEFAULT_QUEUE}.notifications"
)
CELERY_TASK_ROUTES = {"planboard.tasks.*": {"queue": PLANBOARD_NOTIFICATION_QUEUE}}
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Redelivery of unacked tasks after a worker dies (Redis transport).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": int(os.environ.get("PLANBOARD_VISIBILITY_TIMEOUT", "3600"))
}
# Embedded mode runs the worker inside the web process (see `manage.py runembedded`).
PLANBOARD_EMBEDDED = not REDIS_URL
# Seconds a session page's presence (who has it open) lives without a heartbeat (the page
# sends one every 15 s; a hidden tab's timers may be slowed to one a minute); kept in Redis
# with REDIS_URL, else in the process's memory.
PLANBOARD_PRESENCE_TTL = int(os.environ.get("PLANBOARD_PRESENCE_TTL", "90"))
# A model's answer is streamed to a session only while a page there has joined presence (a
# streamed answer costs the worker several times the CPU). True streams every answer, for
# clients that follow the session socket without joining presence.
PLANBOARD_STREAM_UNWATCHED = env_bool("PLANBOARD_STREAM_UNWATCHED", False)

# --- Sign-in protection -----------------------------------------------------------------
# Reverse proxies in front of daphne. The client address is the one the outermost trusted proxy
# appended to X-Forwarded-For; with 0 the header is never read (clients write what they like in
# it) and the TCP peer counts. Throttles and the login lockout both use this rule.
PLANBOARD_TRUSTED_PROXIES = int(os.environ.get("PLANBOARD_TRUSTED_PROXIES", "0"))
# Only a proxy we trust may say the browser spoke HTTPS (it must set, not pass on, the header).
if PLANBOARD_TRUSTED_PROXIES > 0:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# django-axes: after PLANBOARD_LOGIN_FAILURE_LIMIT wrong passwords for one username from one
# address, that pair is refused (web login, admin login and API token alike) for the cool-off.
# Keyed by the (username, address) pair so that an attacker cannot lock a user out everywhere;
# guessing across many usernames from one address is slowed by the token throttle instead.
AXES_FAILURE_LIMIT = int(os.environ.get("PLANBOARD_LOGIN_FAILURE_LIMIT", "5"))
_cooloff_minutes = float(os.environ.get("PLANBOARD_LOGIN_COOLOFF_MINUTES", "15"))
# 0 keeps a pair locked until an admin removes its access attempt (admin or `axes_reset`).
AXES_COOLOFF_TIME = timedelta(minutes=_cooloff_minutes) if _cooloff_minutes > 0 else None
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# Attempts live in the database: shared by every process in every mode (also embedded, which
# has no shared cache), they survive restarts, and admins can see and clear them.
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_CLIENT_IP_CALLABLE = "planboard.security.client_ip"
AXES_RESET_ON_SUCCESS = True
# Successful logins are in the web server log already; no table that only grows.
AXES_DISABLE_ACCESS_LOG = True
AXES_LOCKOUT_CALLABLE = "planboard.web.views.login_locked_out"

# --- DRF / OpenAPI -------------------------------------------------------------------
# API tokens stop working this many hours after they were issued (0: never expire).
PLANBOARD_TOKEN_TTL_HOURS = float(os.environ.get("PLANBOARD_TOKEN_TTL_HOURS", "720"))
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "planboard.api.authentication.ExpiringTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 25,
    "DEFAULT_SCHEMA_CLASS": "planboard.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "planboard.api.errors.exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "messages": os.environ.get("PLANBOARD_MESSAGE_RATE", "30/min"),
        # Token requests (password checks) per client address.
        "anon": os.environ.get("PLANBOARD_TOKEN_RATE", "10/min"),
    },
    # Without this DRF takes the whole client-written X-Forwarded-For as the address.
    "NUM_PROXIES": PLANBOARD_TRUSTED_PROXIES,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Planboard API",
    "DESCRIPTION": "Plans, subtasks, chat sessions and agent runs.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs pages are for signed-in people only: the map of every endpoint
    # is no business of anonymous visitors. A token or a session cookie both work.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SERVE_AUTHENTICATION": [
        "planboard.api.authentication.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Served from our static files: the docs page works without internet access.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "ToolsetKindEnum": "planboard.models.Toolset.Kind",
        "ToolCallStatusEnum": "planboard.models.ToolCall.Status",
        "ToolPolicyEnum": "planboard.models.ToolsetTool.Policy",
        "DecisionChannelEnum": "planboard.models.Channel",
        "InboxKindEnum": "planboard.models.Decision.Kind",
        "ScheduleKindEnum": "planboard.models.Schedule.Kind",
    },
}

# --- The agent -------------------------------------------------------------------------
# Any litellm model string; empty means the offline demo model.
PLANBOARD_LLM_MODEL = os.environ.get("PLANBOARD_LLM_MODEL", "") or "planboard-demo/offline"
PLANBOARD_LLM_API_BASE = os.environ.get("PLANBOARD_LLM_API_BASE", "") or None
PLANBOARD_LLM_API_KEY = os.environ.get("PLANBOARD_LLM_API_KEY", "") or None
# An agent profile's own key is read from the environment variable it names, and only from one
# whose name starts with this prefix (never DJANGO_SECRET_KEY, DATABASE_URL, ...).
PLANBOARD_PROFILE_KEY_PREFIX = (
    os.environ.get("PLANBOARD_PROFILE_KEY_PREFIX", "") or "PLANBOARD_LLM_KEY_"
)
PLANBOARD_LLM_TIMEOUT = float(os.environ.get("PLANBOARD_LLM_TIMEOUT", "120"))
# Rate limits, timeouts and connection errors are retried with doubling backoff.
PLANBOARD_LLM_ATTEMPTS = int(os.environ.get("PLANBOARD_LLM_ATTEMPTS", "3"))
PLANBOARD_LLM_RETRY_DELAY = float(os.environ.get("PLANBOARD_LLM_RETRY_DELAY", "1.0"))
# OpenAI and OpenAI-compatible servers are reached through litellm's own HTTP handler; 1 goes
# through the OpenAI SDK instead (its request transform costs ~5 ms of CPU a call; see
# docs/PERFORMANCE.md, benchmark 7).
PLANBOARD_LLM_OPENAI_SDK = os.environ.get("PLANBOARD_LLM_OPENAI_SDK", "0") == "1"
PLANBOARD_LLM_CONTEXT_TOKENS = int(os.environ.get("PLANBOARD_LLM_CONTEXT_TOKENS", "32000"))
PLANBOARD_AGENT_MAX_STEPS = int(os.environ.get("PLANBOARD_AGENT_MAX_STEPS", "40"))
# A worker driving a run renews its lease every third of this; another worker handed the same
# run takes over only once the lease has expired (the first worker died).
PLANBOARD_RUN_LEASE_SECONDS = float(os.environ.get("PLANBOARD_RUN_LEASE_SECONDS", "60"))
# Every worker process sweeps for runs whose lease expired (their worker died) and dispatches
# them again, every this many seconds (jittered); 0 turns the sweep off. Default: a quarter lease.
PLANBOARD_SWEEP_SECONDS = float(
    os.environ.get("PLANBOARD_SWEEP_SECONDS", "") or PLANBOARD_RUN_LEASE_SECONDS / 4
)
# Runs of one user that may be in flight (dispatched or running) at once; the rest wait,
# queued in creation order. 0 = no limit.
PLANBOARD_USER_RUNS_IN_FLIGHT = int(os.environ.get("PLANBOARD_USER_RUNS_IN_FLIGHT", "4"))
# The run host (agents/runtime): threads (and so PostgreSQL connections) per worker process for
# the runs' database work, and requests at once to one model from one process.
PLANBOARD_RUN_DB_THREADS = int(os.environ.get("PLANBOARD_RUN_DB_THREADS", "4"))
PLANBOARD_MODEL_CONCURRENCY = int(os.environ.get("PLANBOARD_MODEL_CONCURRENCY", "500"))
# The size (resident memory, MB) past which a worker process fails the run that grew it the
# most, hands its other runs off and recycles (agents/runtime/memory_limit.py). 0 = no limit.
PLANBOARD_WORKER_MEMORY_LIMIT_MB = float(
    os.environ.get("PLANBOARD_WORKER_MEMORY_LIMIT_MB", "") or "2048"
)
# The demo model's made-up price, so costs show on the board (US dollars per 1000 tokens).
PLANBOARD_DEMO_PRICE_PER_1K_TOKENS = float(
    os.environ.get("PLANBOARD_DEMO_PRICE_PER_1K_TOKENS", "0.002")
)
# Seconds the offline demo model waits before each answer: slow enough to follow the board
# and edit it mid-run, as the README invites (tests set 0).
PLANBOARD_DEMO_STEP_DELAY = float(os.environ.get("PLANBOARD_DEMO_STEP_DELAY", "2.5"))
# In-process models (litellm custom providers): provider name -> dotted path of a model object
# or class with `respond(model=, messages=, tools=)`. `planboard-demo/<anything>` is the
# offline demo model.
PLANBOARD_LOCAL_MODELS = {"planboard-demo": "agents.demo_model.DemoModel"}
# Dotted path of the callable that starts an agent run once its row is committed, called as
# `dispatcher(run_id, session_id=...)` (the session may be None: the dispatcher reads it).
PLANBOARD_RUN_DISPATCHER = os.environ.get("PLANBOARD_RUN_DISPATCHER", "agents.tasks.dispatch_run")
# --- The inbox's notifications and action links (docs/INBOX.md) -------------------------
# How a queued notification is handed to a worker: called with (notification id, delay).
PLANBOARD_NOTIFICATION_DISPATCHER = os.environ.get(
    "PLANBOARD_NOTIFICATION_DISPATCHER", "planboard.tasks.dispatch_notification"
)
# Where people reach this site: the absolute links in emails and webhooks start with it.
PLANBOARD_PUBLIC_URL = os.environ.get("PLANBOARD_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")
# How long a signed action link works; an approval nobody decided by then counts as denied.
PLANBOARD_ACTION_LINK_HOURS = float(os.environ.get("PLANBOARD_ACTION_LINK_HOURS", "24"))
# Seconds for a whole webhook request (resolving, connecting, sending, the answer's status);
# the answer's body is never read.
PLANBOARD_WEBHOOK_TIMEOUT = float(os.environ.get("PLANBOARD_WEBHOOK_TIMEOUT", "10"))
# Sending attempts per notification (email or webhook) before it is marked failed.
PLANBOARD_NOTIFICATION_ATTEMPTS = int(os.environ.get("PLANBOARD_NOTIFICATION_ATTEMPTS", "5"))
# A notification claimed this long ago by a worker that never finished is sent again.
PLANBOARD_NOTIFICATION_CLAIM_SECONDS = float(
    os.environ.get("PLANBOARD_NOTIFICATION_CLAIM_SECONDS", "300")
)
# Email through Django's backend: printed to the console in the embedded mode.
EMAIL_BACKEND = os.environ.get(
    "DJANGO_EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend"
    if PLANBOARD_EMBEDDED
    else "planboard.mail.DeadlineSMTPBackend",
)
EMAIL_HOST = os.environ.get("DJANGO_EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("DJANGO_EMAIL_PORT", "25"))
EMAIL_HOST_USER = os.environ.get("DJANGO_EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("DJANGO_EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS", False)
# Seconds each SMTP operation may wait (Django's default is to wait for ever).
EMAIL_TIMEOUT = float(os.environ.get("DJANGO_EMAIL_TIMEOUT", "10"))
# Seconds one whole send may take with `planboard.mail.DeadlineSMTPBackend` (connecting,
# TLS, login, the message, QUIT): a server that drips its answers is given up then.
PLANBOARD_EMAIL_DEADLINE = float(os.environ.get("PLANBOARD_EMAIL_DEADLINE", "30"))
DEFAULT_FROM_EMAIL = os.environ.get("DJANGO_DEFAULT_FROM_EMAIL", "planboard@localhost")
# Sweeps for a beat process (`celery -A planboard beat`): notifications whose hand-off was
# lost, and action links that expired unused (approvals count as denied).
#
# Beat keeps its schedule in the database (django-celery-beat): admins see and change each
# periodic task in Django admin. Entries listed here are written into it when beat starts.
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Seconds between two sweeps for due schedules (beat's entry; the embedded mode's loop).
PLANBOARD_SCHEDULE_TICK_SECONDS = float(os.environ.get("PLANBOARD_SCHEDULE_TICK_SECONDS", "60"))
CELERY_BEAT_SCHEDULE = {
    "send-due-notifications": {"task": "planboard.tasks.send_due_notifications", "schedule": 60.0},
    "expire-action-links": {"task": "planboard.tasks.expire_action_links", "schedule": 60.0},
    "sweep-schedules": {
        "task": "planboard.tasks.sweep_schedules",
        "schedule": PLANBOARD_SCHEDULE_TICK_SECONDS,
    },
}
# --- Schedules (docs/SCHEDULES.md) --------------------------------------------------------
# After the sweep was stopped, the newest missed occurrence still fires if it is at most this
# many hours late; older ones are recorded as missed.
PLANBOARD_SCHEDULE_CATCH_UP_HOURS = float(os.environ.get("PLANBOARD_SCHEDULE_CATCH_UP_HOURS", "12"))
# The shortest time allowed between two occurrences of one schedule (minutes).
PLANBOARD_SCHEDULE_MIN_MINUTES = int(os.environ.get("PLANBOARD_SCHEDULE_MIN_MINUTES", "5"))
# A new schedule pauses itself after this many failed occurrences in a row (its owner may
# choose another number per schedule).
PLANBOARD_SCHEDULE_MAX_FAILURES = int(os.environ.get("PLANBOARD_SCHEDULE_MAX_FAILURES", "3"))
# External tools (MCP servers): how long one call may take (seconds, server start included),
# how much of its output the model gets (characters), and the function `planboard` calls to
# ask a toolset's server for its tools (planboard never imports `agents`).
PLANBOARD_TOOL_TIMEOUT = float(os.environ.get("PLANBOARD_TOOL_TIMEOUT", "60"))
# How long a server's question to a person (MCP elicitation) waits for an answer (seconds);
# then the server is told "decline". The wait does not count against PLANBOARD_TOOL_TIMEOUT.
PLANBOARD_ELICITATION_TIMEOUT = float(os.environ.get("PLANBOARD_ELICITATION_TIMEOUT", "600"))
# A server's `input_required` answer (MCP 2026-07-28) parks the call: its questions wait this
# long (seconds, default 7 days) with no worker held, and a call asks at most this many rounds.
PLANBOARD_MCP_INPUT_SECONDS = float(os.environ.get("PLANBOARD_MCP_INPUT_SECONDS", "604800"))
PLANBOARD_MCP_INPUT_ROUNDS = int(os.environ.get("PLANBOARD_MCP_INPUT_ROUNDS", "5"))
# How long a tool call the server runs as an MCP task may take (seconds, from the call's start);
# then the task is cancelled at the server and the call answered so.
PLANBOARD_MCP_TASK_DEADLINE = float(os.environ.get("PLANBOARD_MCP_TASK_DEADLINE", "86400"))
PLANBOARD_TOOL_OUTPUT_LIMIT = int(os.environ.get("PLANBOARD_TOOL_OUTPUT_LIMIT", "20000"))
PLANBOARD_TOOL_DISCOVERER = "agents.mcp.listing.discover_tools"
# Gets an MCP prompt's text for the composer (prompts/get on a connection of its own).
PLANBOARD_TOOL_PROMPT_GETTER = "agents.mcp.calls.get_prompt"
# "Connect" for OAuth toolsets: begin (discovery, registration, PKCE) and finish (the code
# exchanged for tokens) through the MCP SDK (docs/TOOLS.md).
PLANBOARD_TOOL_OAUTH_START = "agents.mcp.oauth.oauth_start"
PLANBOARD_TOOL_OAUTH_FINISH = "agents.mcp.oauth.oauth_finish"
# Networks staff-entered URLs (toolsets, a profile's api_base) may reach although they are not
# public: comma-separated CIDRs. Loopback, private, link-local (cloud metadata) and the like are
# refused otherwise (planboard/outbound.py). The embedded mode may reach its own machine.
PLANBOARD_TOOL_ALLOWED_NETWORKS = env_list(
    "PLANBOARD_TOOL_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128" if PLANBOARD_EMBEDDED and DEBUG else ""
)
# The same for people's webhook URLs, a list of its own: anyone may enter a webhook, so the
# networks opened to staff's toolsets stay closed to them (also in the embedded mode).
PLANBOARD_WEBHOOK_ALLOWED_NETWORKS = env_list("PLANBOARD_WEBHOOK_ALLOWED_NETWORKS", "")
for _name, _networks in (
    ("PLANBOARD_TOOL_ALLOWED_NETWORKS", PLANBOARD_TOOL_ALLOWED_NETWORKS),
    ("PLANBOARD_WEBHOOK_ALLOWED_NETWORKS", PLANBOARD_WEBHOOK_ALLOWED_NETWORKS),
):
    for _network in _networks:
        try:
            ip_network(_network, strict=False)
        except ValueError:
            raise RuntimeError(
                f"{_name}: {_network!r} is not a network; write CIDRs "
                "like 10.1.2.0/24 or ::1/128, separated by commas."
            ) from None
# What a refresh takes from a server (docs/TOOLS.md, "Limits"): past the first two the refresh
# is refused; a tool over the per-tool size is left out.
PLANBOARD_TOOLSET_MAX_TOOLS = int(os.environ.get("PLANBOARD_TOOLSET_MAX_TOOLS", "200"))
PLANBOARD_TOOLSET_SCHEMA_MAX_BYTES = int(
    os.environ.get("PLANBOARD_TOOLSET_SCHEMA_MAX_BYTES", "524288")
)
PLANBOARD_TOOL_SCHEMA_MAX_BYTES = int(os.environ.get("PLANBOARD_TOOL_SCHEMA_MAX_BYTES", "65536"))
# Resources, resource templates and prompts kept of one toolset, each (the first ones listed).
PLANBOARD_TOOLSET_MAX_CATALOG_ITEMS = int(
    os.environ.get("PLANBOARD_TOOLSET_MAX_CATALOG_ITEMS", "200")
)
# The largest message (a tool result, a listing page) a worker or web server reads from an
# MCP server; a larger one is given up while it arrives (agents/mcp_limits.py).
PLANBOARD_MCP_MESSAGE_MAX_BYTES = int(
    os.environ.get("PLANBOARD_MCP_MESSAGE_MAX_BYTES", str(4 * 1024 * 1024))
)
# Live MCP sessions (agents/mcp/sessions.py): one per chat session and toolset, kept open on
# the worker between calls and runs; closed after this many seconds unused, and the least
# recently used one closed past this many open on one worker process.
PLANBOARD_MCP_SESSION_IDLE_SECONDS = float(
    os.environ.get("PLANBOARD_MCP_SESSION_IDLE_SECONDS", "600")
)
PLANBOARD_MCP_SESSIONS_PER_HOST = int(os.environ.get("PLANBOARD_MCP_SESSIONS_PER_HOST", "64"))
# The session workspace (the built-in `workspace` toolset): files are kept in the default
# storage (local MEDIA_ROOT unless STORAGES says otherwise); the bytes one file may hold and
# the files one session may hold.
MEDIA_ROOT = Path(os.environ.get("PLANBOARD_MEDIA_ROOT", str(BASE_DIR / "var" / "media")))
PLANBOARD_WORKSPACE_FILE_LIMIT = int(os.environ.get("PLANBOARD_WORKSPACE_FILE_LIMIT", "1000000"))
PLANBOARD_WORKSPACE_MAX_FILES = int(os.environ.get("PLANBOARD_WORKSPACE_MAX_FILES", "100"))

# --- Security headers ------------------------------------------------------------------
# Pages load scripts, styles and images only from this site: no inline script, style element
# or style attribute (tests/system/test_security.py checks the templates). The websocket origin
# is added per request (planboard.security). Also in DEBUG, so violations show up early.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    }
}
SECURE_REFERRER_POLICY = "same-origin"

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", False)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
    SECURE_CONTENT_TYPE_NOSNIFF = True
    X_FRAME_OPTIONS = "DENY"
    # Once the site is on HTTPS, browsers refuse plain HTTP to it for this long. Sent only on
    # HTTPS requests (behind a proxy: PLANBOARD_TRUSTED_PROXIES makes X-Forwarded-Proto count).
    SECURE_HSTS_SECONDS = int(
        os.environ.get("DJANGO_SECURE_HSTS_SECONDS")
        or (365 * 24 * 3600 if SESSION_COOKIE_SECURE else 0)
    )
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", False)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # URLs a record carries (HTTP clients log the ones they request) lose their credentials.
    "filters": {"url_credentials": {"()": "planboard.log_redaction.RedactUrlCredentials"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "filters": ["url_credentials"]},
    },
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {
        "LiteLLM": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        # Django's own handlers (its DEBUG console, runserver's) carry no filter: its records
        # go to the root's handlers instead (a 4xx line's path may be an action link's token).
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.server": {"handlers": [], "propagate": True},
    },
}

# Keys that encrypt toolset secrets at rest (planboard/secret_fields.py): comma-separated
# Fernet keys, the first encrypts, all decrypt (rotation: docs/DEPLOYMENT.md). Unset: a key
# derived from DJANGO_SECRET_KEY (check planboard.W002 warns in production).
PLANBOARD_SECRETS_KEYS = os.environ.get("PLANBOARD_SECRETS_KEYS", "")
