"""The deployment files stay consistent with each other and with settings.py.

Images cannot be pulled here, so the compose file is checked by parsing it (and by
`docker compose config` where the compose CLI exists).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.env import settings_probe

ROOT = Path(__file__).resolve().parents[2]
APP_SERVICES = ("migrate", "web", "worker")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def parse_env_file(text: str) -> dict[str, str]:
    """KEY=VALUE lines as docker's env_file reads them (comments and blanks skipped)."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value
    return values


def settings_env_names() -> set[str]:
    source = (ROOT / "planboard" / "settings.py").read_text()
    readers = r"(?:os\.environ\.get|os\.getenv|env_bool|env_list|env_int|env_float)"
    pattern = readers + r"""\(\s*["']([A-Z0-9_]+)["']"""
    return set(re.findall(pattern, source)) | set(
        re.findall(r"""os\.environ\[\s*["']([A-Z0-9_]+)["']\s*\]""", source)
    )


def test_compose_has_every_service(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) >= {"postgres", "redis", *APP_SERVICES}


@pytest.mark.parametrize("name", ["postgres", "redis"])
def test_backing_services_have_health_checks(compose: dict[str, Any], name: str) -> None:
    check = compose["services"][name]["healthcheck"]
    probe = " ".join(check["test"])
    assert ("pg_isready" if name == "postgres" else "redis-cli") in probe
    assert check["retries"] >= 3


def test_app_services_share_one_image_and_one_env_file(compose: dict[str, Any]) -> None:
    services = compose["services"]
    images = {services[name]["image"] for name in APP_SERVICES}
    env_files = {json.dumps(services[name]["env_file"]) for name in APP_SERVICES}
    assert len(images) == 1
    assert env_files == {json.dumps(".env")}
    assert all(services[name]["build"] == "." for name in APP_SERVICES)
    # The postgres container reads its credentials from the same file.
    assert services["postgres"]["env_file"] == ".env"


def test_migrate_runs_once_before_web_and_workers(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert "migrate" in " ".join(services["migrate"]["command"])
    assert services["migrate"]["restart"] == "no"
    for name in ("web", "worker"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully"
        assert depends["postgres"]["condition"] == "service_healthy"
        assert depends["redis"]["condition"] == "service_healthy"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_web_runs_daphne_and_worker_runs_celery(compose: dict[str, Any]) -> None:
    services = compose["services"]
    web = " ".join(services["web"]["command"])
    worker = " ".join(services["worker"]["command"])
    assert "daphne" in web and "planboard.asgi:application" in web
    # daphne's access log through logging: its filter hides action-link tokens.
    assert "-m planboard.daphne_server" in web
    assert "celery -A planboard worker" in worker
    assert "healthcheck" in services["web"]


def test_one_beat_runs_the_sweeps_from_the_database(compose: dict[str, Any]) -> None:
    from django.conf import settings

    beat = compose["services"]["beat"]
    assert "celery -A planboard beat" in " ".join(beat["command"])
    assert beat["image"] == compose["services"]["worker"]["image"]
    assert "deploy" not in beat  # never scaled: two beats would sweep twice
    assert settings.CELERY_BEAT_SCHEDULER == "django_celery_beat.schedulers:DatabaseScheduler"
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert tasks == {
        "planboard.tasks.send_due_notifications",
        "planboard.tasks.expire_action_links",
        "planboard.tasks.sweep_schedules",
    }


def notifier_queue(compose: dict[str, Any], env: dict[str, str]) -> str:
    """The queue the notifier's command names, as its shell expands it in `env`."""
    shell, flag, script = compose["services"]["notifier"]["command"]
    script = script.replace("$$", "$").replace("exec celery", "echo celery", 1)
    done = subprocess.run(
        [shell, flag, script], env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True
    )
    return re.findall(r"--queues=(\S+)", done.stdout)[0]


@pytest.mark.parametrize(
    "env",
    [{}, {"PLANBOARD_TASK_QUEUE": "team-a"}, {"PLANBOARD_NOTIFICATION_QUEUE": "sends"}],
    ids=["default", "task-queue", "own-name"],
)
def test_a_notifier_consumes_the_notifications_queue_and_workers_do_not(
    compose: dict[str, Any], env: dict[str, str]
) -> None:
    services = compose["services"]
    assert "--queues" not in " ".join(services["worker"]["command"])
    assert services["notifier"]["image"] == services["worker"]["image"]
    expected = settings_probe(env, "result = settings.PLANBOARD_NOTIFICATION_QUEUE")
    assert notifier_queue(compose, env) == expected
    assert expected != settings_probe(env, "result = settings.CELERY_TASK_DEFAULT_QUEUE")


def test_worker_can_be_scaled(compose: dict[str, Any]) -> None:
    worker = compose["services"]["worker"]
    # A fixed container name or host port would make `--scale worker=N` fail.
    assert "container_name" not in worker
    assert "ports" not in worker


def test_dockerfile_builds_a_non_root_image_with_static_files(dockerfile: str) -> None:
    assert re.search(r"^FROM python:3\.11-slim\b", dockerfile, re.M)
    # Exact versions from the lock file, then the project itself without resolving again.
    assert "pip install -r requirements/base.lock" in dockerfile
    assert "pip install --no-deps ." in dockerfile
    assert "collectstatic" in dockerfile
    # collectstatic with DEBUG=0 needs a secret; a build-only dummy, never the real one.
    assert re.search(r"DJANGO_DEBUG=0 DJANGO_SECRET_KEY=\S+", dockerfile)
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.M)
    assert users and users[-1] not in {"root", "0"}
    assert '"-m", "planboard.daphne_server"' in dockerfile.split("CMD", 1)[1]


def test_daphne_leaves_forwarded_headers_to_django(
    compose: dict[str, Any], dockerfile: str
) -> None:
    # daphne's --proxy-headers makes the client-written left end of X-Forwarded-For the client
    # address; Django reads the header itself, through PLANBOARD_TRUSTED_PROXIES hops only.
    assert "--proxy-headers" not in compose["services"]["web"]["command"]
    assert "--proxy-headers" not in dockerfile.split("CMD", 1)[1]


SIGN_IN_SETTINGS = (
    "result = {'proxies': settings.REST_FRAMEWORK['NUM_PROXIES'], "
    "'ssl_header': getattr(settings, 'SECURE_PROXY_SSL_HEADER', None), "
    "'axes_ip': settings.AXES_CLIENT_IP_CALLABLE, "
    "'limit': settings.AXES_FAILURE_LIMIT, "
    "'cooloff': settings.AXES_COOLOFF_TIME and settings.AXES_COOLOFF_TIME.total_seconds(), "
    "'lock_by': settings.AXES_LOCKOUT_PARAMETERS, "
    "'token_ttl_hours': settings.PLANBOARD_TOKEN_TTL_HOURS, "
    "'cache': settings.CACHES['default']['BACKEND']}"
)


def test_sign_in_settings_default_to_a_directly_reached_server() -> None:
    assert settings_probe({}, SIGN_IN_SETTINGS) == {
        "proxies": 0,
        "ssl_header": None,
        "axes_ip": "planboard.security.client_ip",
        "limit": 5,
        "cooloff": 15 * 60,
        "lock_by": [["username", "ip_address"]],
        "token_ttl_hours": 720,
        "cache": "django.core.cache.backends.locmem.LocMemCache",
    }


def test_sign_in_settings_follow_the_environment() -> None:
    env = {
        "PLANBOARD_TRUSTED_PROXIES": "1",
        "PLANBOARD_LOGIN_FAILURE_LIMIT": "8",
        "PLANBOARD_LOGIN_COOLOFF_MINUTES": "0",
        "PLANBOARD_TOKEN_TTL_HOURS": "0",
        "REDIS_URL": "redis://127.0.0.1:6379/0",
    }
    loaded = settings_probe(env, SIGN_IN_SETTINGS)
    assert loaded["proxies"] == 1
    assert loaded["ssl_header"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert loaded["limit"] == 8
    assert loaded["cooloff"] is None  # locked until an admin unlocks
    assert loaded["token_ttl_hours"] == 0
    # Throttle counters are shared by every web process.
    assert loaded["cache"] == "planboard.cache.RedisCache"


PRODUCTION = {"DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": "test-only-secret-key-for-a-probe"}
# The login page over HTTPS, over HTTP, and over HTTP with a proxy's X-Forwarded-Proto.
HEADERS_PROBE = """
from django.test import Client
from django.test.utils import override_settings
# No collectstatic in a test: plain file names instead of the hashed manifest.
plain_files = {**settings.STORAGES, "staticfiles": {
    "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
with override_settings(STORAGES=plain_files):
    answers = {
        "https": Client().get("/accounts/login/", secure=True),
        "http": Client().get("/accounts/login/"),
        "forwarded": Client().get("/accounts/login/", HTTP_X_FORWARDED_PROTO="https"),
    }
result = {name: {"status": r.status_code, **dict(r.headers)} for name, r in answers.items()}
"""


def test_production_pages_send_the_security_headers() -> None:
    headers = settings_probe({**PRODUCTION, "DJANGO_SECURE_COOKIES": "1"}, HEADERS_PROBE)
    https = headers["https"]
    assert https["status"] == 200
    assert https["Strict-Transport-Security"] == "max-age=31536000"  # a year by default
    assert https["Referrer-Policy"] == "same-origin"
    assert https["X-Frame-Options"] == "DENY"
    assert https["X-Content-Type-Options"] == "nosniff"
    rules = dict(part.strip().split(" ", 1) for part in https["Content-Security-Policy"].split(";"))
    assert rules["default-src"] == "'self'"
    assert rules["script-src"] == "'self'" and rules["style-src"] == "'self'"
    assert rules["connect-src"] == "'self' ws://testserver wss://testserver"
    assert rules["img-src"] == "'self' data:"
    assert rules["object-src"] == "'none'" and rules["frame-ancestors"] == "'none'"
    assert rules["base-uri"] == "'self'" and rules["form-action"] == "'self'"
    # HSTS only over HTTPS, and X-Forwarded-Proto counts only from a trusted proxy.
    assert "Strict-Transport-Security" not in headers["http"]
    assert "Strict-Transport-Security" not in headers["forwarded"]
    assert headers["http"]["Content-Security-Policy"] == https["Content-Security-Policy"]


def test_hsts_follows_the_environment() -> None:
    env = {
        **PRODUCTION,
        "DJANGO_SECURE_COOKIES": "1",
        "DJANGO_SECURE_HSTS_SECONDS": "600",
        "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
        "PLANBOARD_TRUSTED_PROXIES": "1",
    }
    headers = settings_probe(env, HEADERS_PROBE)
    assert headers["forwarded"]["Strict-Transport-Security"] == "max-age=600; includeSubDomains"


def test_no_hsts_while_the_site_is_not_on_https() -> None:
    headers = settings_probe(PRODUCTION, HEADERS_PROBE)
    assert "Strict-Transport-Security" not in headers["https"]
    assert headers["https"]["Referrer-Policy"] == "same-origin"


def test_dockerignore_keeps_secrets_and_local_state_out() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".env"} <= ignored
    assert "/var" in ignored or "var" in ignored


def test_env_example_documents_every_setting() -> None:
    text = (ROOT / ".env.example").read_text()
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", text, re.M))
    missing = settings_env_names() - documented
    assert not missing, f".env.example lacks {sorted(missing)}"


def test_env_example_names_compose_variables() -> None:
    compose_text = (ROOT / "docker-compose.yml").read_text()
    used = set(re.findall(r"\$\$?\{([A-Z][A-Z0-9_]+)", compose_text))
    documented = set(
        re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M)
    )
    assert used - documented == set()


def test_env_example_yields_a_working_production_configuration() -> None:
    """The file as docker loads it gives sane settings (an empty value is not 'unset')."""
    env = {
        "PATH": "/usr/bin:/bin",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DJANGO_SETTINGS_MODULE": "planboard.settings",
        **parse_env_file((ROOT / ".env.example").read_text()),
    }
    probe = (
        "import json, django; from django.conf import settings; django.setup(); "
        "print(json.dumps({'debug': settings.DEBUG, 'broker': settings.CELERY_BROKER_URL, "
        "'dispatcher': settings.PLANBOARD_RUN_DISPATCHER, "
        "'engine': settings.DATABASES['default']['ENGINE'], "
        "'layer': settings.CHANNEL_LAYERS['default']['BACKEND'], "
        "'rate': settings.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']['messages'], "
        "'embedded': settings.PLANBOARD_EMBEDDED}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == {
        "debug": False,
        "broker": env["REDIS_URL"],
        "dispatcher": "agents.tasks.dispatch_run",
        "engine": "django.db.backends.postgresql",
        "layer": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "rate": env["PLANBOARD_MESSAGE_RATE"],
        "embedded": False,
    }


def test_compose_cli_accepts_the_file(tmp_path: Path) -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("docker CLI not installed")
    probe = subprocess.run(
        [docker, "compose", "version"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        pytest.skip("the docker compose plugin is not installed")
    env_file = ROOT / ".env"
    created = not env_file.exists()
    if created:
        env_file.write_text((ROOT / ".env.example").read_text())
    try:
        result = subprocess.run(
            [docker, "compose", "-f", str(ROOT / "docker-compose.yml"), "config", "--quiet"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        if created:
            env_file.unlink()
    assert result.returncode == 0, result.stderr


DATABASE_SETTINGS = (
    "db = settings.DATABASES['default']\n"
    "result = {'options': db.get('OPTIONS', {}), 'max_age': db['CONN_MAX_AGE']}"
)
PG_URL = "postgres://planboard:pw@db.internal:5432/planboard"


def test_postgres_prepares_statements_and_pools_only_where_asked() -> None:
    # Workers and commands: prepared statements, one reused connection, no pool.
    env = {"DATABASE_URL": PG_URL, "DJANGO_CONN_MAX_AGE": "60"}
    assert settings_probe(env, DATABASE_SETTINGS) == {
        "options": {"server_side_binding": True, "prepare_threshold": 2},
        "max_age": 60,
    }
    # The web process (planboard/asgi.py sets PLANBOARD_DB_POOL=1): a pool, Django's reuse off.
    pooled = settings_probe({**env, "PLANBOARD_DB_POOL": "1"}, DATABASE_SETTINGS)
    assert pooled["options"]["pool"] == {"min_size": 2, "max_size": 20, "timeout": 10}
    assert pooled["max_age"] == 0
    # Behind a transaction-mode pgbouncer prepared statements must be off.
    plain = settings_probe({**env, "DJANGO_DB_SERVER_SIDE_BINDING": "0"}, DATABASE_SETTINGS)
    assert plain["options"] == {}


def test_the_web_process_pools_connections_and_freezes_its_startup_objects() -> None:
    code = (
        "import gc, sys, planboard.asgi\n"
        "from planboard.gc_tuning import THRESHOLDS\n"
        "result = {'pool': 'pool' in settings.DATABASES['default']['OPTIONS'],\n"
        "          'dispatcher': 'agents.tasks' in sys.modules and 'litellm' in sys.modules,\n"
        "          'frozen': gc.get_freeze_count(), 'thresholds': list(gc.get_threshold()),\n"
        "          'expected': list(THRESHOLDS)}"
    )
    # The probe sets Django up before importing planboard.asgi, so the pool variable is given
    # here as asgi.py gives it to daphne; asgi.py's own default is checked on the file.
    found = settings_probe({"DATABASE_URL": PG_URL, "PLANBOARD_DB_POOL": "1"}, code)
    assert found["pool"] is True
    # The run dispatcher (and litellm with it) is loaded before the first message is posted.
    assert found["dispatcher"] is True
    assert found["frozen"] > 10_000, "start-up objects were not frozen"
    assert found["thresholds"] == found["expected"]
    asgi = (ROOT / "planboard" / "asgi.py").read_text()
    assert 'os.environ.setdefault("PLANBOARD_DB_POOL", "1")' in asgi
