# Planboard — the two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: run test lint typecheck lock deps deps-dev browser migrate demo-user worker notifier beat web clean

# Installs come from the lock files (exact versions, tested together), so a new upstream
# release can never break a fresh machine. `pip check` fails when pyproject.toml asks for a
# package the lock lacks: then run `make lock`.
$(VENV)/.installed: pyproject.toml requirements/base.lock
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is required ($(PYTHON) not found)"; exit 1; }
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements/base.lock
	$(PIP) install -q --no-deps -e .
	$(PIP) check
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements/dev.lock
	$(PIP) install -q -r requirements/dev.lock
	$(PIP) check
	touch $@

## Refresh the lock files: resolve pyproject.toml afresh in throw-away venvs and pin what
## was installed. Run it after changing dependencies, then run `make test` and commit.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install -q --upgrade pip
	.venv-lock/bin/pip install -q .
	{ echo "# Runtime dependencies, pinned by \`make lock\` from pyproject.toml."; \
	  .venv-lock/bin/pip freeze --exclude-editable | grep -v '^planboard[= @]'; } > requirements/base.lock
	.venv-lock/bin/pip install -q ".[dev]"
	{ echo "# Runtime and development dependencies, pinned by \`make lock\` from pyproject.toml."; \
	  .venv-lock/bin/pip freeze --exclude-editable | grep -v '^planboard[= @]'; } > requirements/dev.lock
	rm -rf .venv-lock build

deps: $(VENV)/.installed
deps-dev: $(VENV)/.installed-dev

# TypeScript checks frontend/js (JSDoc types, no bundler); installed from package-lock.json,
# again only when the lock changes. The app itself never needs Node.
node_modules/.package-lock.json: package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "Node.js and npm are required (apt-get install nodejs npm)"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

## Type checks: mypy over planboard/ and agents/ (incremental, cached in .mypy_cache) and tsc
## over frontend/js; both fail on a misspelled snapshot or event key (docs/ARCHITECTURE.md).
typecheck: deps-dev node_modules/.package-lock.json
	$(VENV)/bin/mypy
	node_modules/.bin/tsc -p tsconfig.json

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
	$(PY) -m planboard.daphne_server -b $${HOST:-0.0.0.0} -p $${PORT:-8000} planboard.asgi:application
worker: deps
	$(VENV)/bin/celery -A planboard worker -l info
## Notification sends and the inbox's sweeps, on their own queue (run workers never take them).
notifier: deps
	$(VENV)/bin/celery -A planboard worker -l info --concurrency=2 --hostname=notifier@%h \
	  --queues=$${PLANBOARD_NOTIFICATION_QUEUE:-$${PLANBOARD_TASK_QUEUE:-celery}.notifications}

## The periodic sweeps (schedules, the inbox's): exactly one beat process per deployment; its
## schedule is in the database (django-celery-beat, editable in Django admin). `make run`
## needs none: the embedded worker repeats the sweeps itself.
beat: migrate
	$(VENV)/bin/celery -A planboard beat -l info

## Run every test (unit, PostgreSQL/Redis integration when configured, real-browser).
## Locally the PostgreSQL test database is kept between runs (migrations still apply);
## CI passes its own PYTEST_ARGS and so starts from an empty one.
PYTEST_ARGS ?= --reuse-db
test: deps-dev browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory typecheck
	$(VENV)/bin/pytest $(PYTEST_ARGS)

lint: deps-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory typecheck

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .mypy_cache node_modules
