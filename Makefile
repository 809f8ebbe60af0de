# Planboard — the two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: run test lint deps deps-dev browser migrate demo-user worker web clean

$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is required ($(PYTHON) not found)"; exit 1; }
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) install -q -e ".[dev]"
	touch $@

deps: $(VENV)/.installed
deps-dev: $(VENV)/.installed-dev

# Browser tests drive Debian's Chromium; install it once (never downloaded at test time).
browser:
	@{ test -x /usr/bin/chromium && fc-list 2>/dev/null | grep -qi wenquanyi; } || { \
	  if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null); \
	  else echo "Install Chromium first: sudo apt-get install -y chromium fonts-wqy-microhei"; exit 1; fi; }

migrate: deps
	$(PY) manage.py migrate --noinput

demo-user: migrate
	$(PY) manage.py ensure_demo_user

## Run the app: embedded mode (SQLite, in-process worker, offline demo model) unless
## DATABASE_URL / REDIS_URL / PLANBOARD_LLM_MODEL say otherwise.
run: demo-user
	$(PY) manage.py runembedded --host $${HOST:-127.0.0.1} --port $${PORT:-8000}

## Production-style processes (with REDIS_URL set): web and workers separately.
web: migrate
	$(PY) manage.py collectstatic --noinput -v0
	$(VENV)/bin/daphne -b $${HOST:-0.0.0.0} -p $${PORT:-8000} planboard.asgi:application
worker: deps
	$(VENV)/bin/celery -A planboard worker -l info --concurrency $${CONCURRENCY:-4}

## Run every test (unit, PostgreSQL/Redis integration when configured, real-browser).
test: deps-dev browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/pytest $(PYTEST_ARGS)

lint: deps-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache
