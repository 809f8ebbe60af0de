"""ASGI entry point: HTTP through Django, websockets through Channels."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planboard.settings")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The web process pools its database connections (see DATABASES in planboard/settings.py).
os.environ.setdefault("PLANBOARD_DB_POOL", "1")

import django

django.setup(set_prefix=False)  # as Django's `get_asgi_application` does

from planboard.web_handler import OneThreadASGIHandler  # noqa: E402

django_asgi_app = OneThreadASGIHandler()

from channels.routing import ProtocolTypeRouter  # noqa: E402

from planboard.realtime.routing import websocket_application  # noqa: E402

application = ProtocolTypeRouter({"http": django_asgi_app, "websocket": websocket_application})

from planboard.services.run_queue import run_dispatcher  # noqa: E402

run_dispatcher()  # loaded now, not by the first message someone posts (litellm takes seconds)

from planboard.gc_tuning import freeze_startup_objects  # noqa: E402

freeze_startup_objects()
