# Two entry points for a fresh machine (see README "Quick start"):
#   make serve  - run the service on its embedded defaults
#   make test   - install everything (packages, Podman, sandbox image) and run lint + all tests
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha256sum | cut -c1-12)

.PHONY: serve test lint install host

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -U pip
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

host:
	bash scripts/setup-host.sh

lint: install
	$(VENV)/bin/ruff check .
	bash scripts/check-module-size.sh
	$(PY) scripts/check-complexity.py

serve: install host
	$(PY) -m hummingbird_agent serve --config config.yaml

test: install host lint
	$(PY) -m pytest -q -p no:cacheprovider
