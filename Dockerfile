# One image for every Planboard process: the migrate job, the web server (daphne) and the
# Celery workers. docker-compose.yml picks the command; .env supplies the settings.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # litellm must use its bundled price list: containers may have no internet access.
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    DJANGO_SETTINGS_MODULE=planboard.settings \
    # The source tree in /app wins over the installed copy, so BASE_DIR (templates,
    # frontend/, staticfiles/) resolves to /app.
    PYTHONPATH=/app

WORKDIR /app

# gettext compiles the translations when the project ships them; nothing else is built.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gettext \
    && rm -rf /var/lib/apt/lists/*

# Dependencies first, so editing the code does not reinstall them.
# The exact versions of requirements/base.lock (`make lock`), never a fresh resolution.
COPY requirements/base.lock requirements/base.lock
RUN pip install -r requirements/base.lock

COPY . .
RUN pip install --no-deps . \
    && if [ -d locale ]; then python manage.py compilemessages -v0; fi \
    # Static files are collected at build time; the secret is a throwaway used only here.
    && DJANGO_DEBUG=0 DJANGO_SECRET_KEY=build-only-not-a-secret \
       python manage.py collectstatic --noinput -v0 \
    # A home of its own: libraries may keep caches under ~ (the code in /app stays read-only).
    && useradd --system --uid 10001 --create-home --home-dir /home/planboard \
       --shell /usr/sbin/nologin planboard \
    && mkdir -p /app/var/media \
    && chown planboard /app/var /app/var/media

USER planboard
EXPOSE 8000

# The web process; the worker and migrate services override the command. daphne through
# planboard.daphne_server: its access log goes through logging, whose filter hides action-link
# tokens (a raw stdout line would not). No --proxy-headers: daphne would take the
# client-written left end of X-Forwarded-For as the client address; Django reads the header
# itself, through PLANBOARD_TRUSTED_PROXIES hops only.
CMD ["python", "-m", "planboard.daphne_server", "--bind", "0.0.0.0", "--port", "8000", "planboard.asgi:application"]
