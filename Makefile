# Two entry points for a fresh machine (see README "Quick start"):
#   make serve  - run the service on its embedded defaults
#   make test   - install everything (packages, Podman, sandbox image, the llama.cpp tier) and run lint + all tests
#   make test-llamacpp - the llama.cpp tier alone: xllamacpp and a 0.5B model (~525 MB), then tests/llamacpp
#                        against llama.cpp's own server (about 2-3 min on two cores)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha256sum | cut -c1-12)

.PHONY: serve test test-llamacpp lint install host llamacpp-tier

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
	$(VENV)/bin/mypy hummingbird_agent

serve: install host
	$(PY) -m hummingbird_agent serve --config config.yaml

llamacpp-tier: install
	VENV=$(VENV) bash scripts/install-llamacpp-tier.sh

test: install host llamacpp-tier lint
	$(PY) -m pytest -q -p no:cacheprovider

test-llamacpp: install host llamacpp-tier
	$(PY) -m pytest -q -p no:cacheprovider -m llamacpp tests/llamacpp
