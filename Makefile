# Two entry points for a fresh machine (see README.md "Quick start"):
#   make serve  - set up the host (as root: Podman, its containers.conf, the sandbox image; each change is said
#                 before it is made; KEEP_PODMAN_CONF=1 keeps your own containers.conf) and run the service on its
#                 embedded defaults
#   make test   - install everything (packages, Podman, sandbox image, the test tools, Chromium, LocalStack, llama.cpp) and run
#                 lint + all tests
#   make test-localstack - only the tests that run on both AWS backends (moto and LocalStack)
#   make test-llamacpp - the llama.cpp tier alone: xllamacpp and a 0.5B model (~525 MB), then tests/llamacpp
#                        against llama.cpp's own server (about 2-3 min on two cores)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha256sum | cut -c1-12)

.PHONY: serve test test-llamacpp test-localstack lint install host test-tools browser llamacpp-tier localstack

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -U pip
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

# KEEP_PODMAN_CONF=1 (make serve KEEP_PODMAN_CONF=1) leaves /etc/containers/containers.conf as it is.
KEEP_PODMAN_CONF ?= 0

host:
	KEEP_PODMAN_CONF=$(KEEP_PODMAN_CONF) bash scripts/setup-host.sh

# The compilers, linters and test runners the triage tests run for real (not needed to serve).
test-tools:
	bash scripts/setup-test-tools.sh

# Headless Chromium from Debian for the documentation's browser test (tests/docs/test_browser.py).
browser:
	bash scripts/setup-browser.sh

# LocalStack in its own venv (.venv-localstack, Python >= 3.13): the second AWS backend of the tests.
localstack:
	bash scripts/setup-localstack.sh >/dev/null

lint: install
	$(VENV)/bin/ruff check .
	bash scripts/check-module-size.sh
	$(PY) scripts/check-complexity.py
	$(VENV)/bin/mypy --strict hummingbird_agent
	$(PY) -m pytest -q -p no:cacheprovider tests/test_layers.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

serve: install host
	$(PY) -m hummingbird_agent serve --config config.yaml

llamacpp-tier: install
	VENV=$(VENV) bash scripts/install-llamacpp-tier.sh

# Test workers (pytest-xdist): each takes whole modules (tests/conftest.py groups them; the llama.cpp tier is one
# group, so one worker loads the model). TEST_WORKERS=0 runs the suite in this process alone.
TEST_WORKERS ?= 2

test: install host test-tools browser localstack llamacpp-tier lint
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadgroup

test-llamacpp: install host llamacpp-tier
	$(PY) -m pytest -q -p no:cacheprovider -m llamacpp tests/llamacpp

AWS_TESTS := tests/events/test_queue_conformance.py tests/events/test_pipeline_moto.py tests/events/test_redelivery.py \
	tests/events/test_queue_tool.py tests/sessions/test_s3_store.py tests/test_localstack_server.py

test-localstack: install localstack
	$(PY) -m pytest -q -p no:cacheprovider $(AWS_TESTS)
