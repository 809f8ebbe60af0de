"""The Celery application; tasks live in `agents.tasks` (runs, on the default queue) and
`planboard.tasks` (notifications, action-link expiry: routed to
`settings.PLANBOARD_NOTIFICATION_QUEUE` by `CELERY_TASK_ROUTES`)."""

from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery, signals
from planboard.log_redaction import RedactUrlCredentials

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planboard.settings")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

app = Celery("planboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["agents", "planboard"])


def embedded_queues() -> list[str]:
    """What the embedded mode's one in-process worker consumes: the runs' queue and the
    notifications' (a worker started without -Q consumes only the first)."""
    from django.conf import settings

    return [settings.CELERY_TASK_DEFAULT_QUEUE, settings.PLANBOARD_NOTIFICATION_QUEUE]


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _redact_url_credentials(logger: logging.Logger, **_: Any) -> None:
    """A worker replaces the root logger's handlers (those of settings.LOGGING) with its own:
    they get the same filter, so worker logs show no credentials of the URLs tools reach."""
    for handler in logger.handlers:
        handler.addFilter(RedactUrlCredentials())
