# Two entry points for a fresh machine (see README "Quick start"):
#   make serve  - run the service on its embedded defaults
#   make test   - install everything (packages, Podman, sandbox image, LocalStack) and run lint + all tests
#   make test-localstack - only the tests that run on both AWS backends (moto and LocalStack)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml constraints.txt | sha256sum | cut -c1-12)

.PHONY: serve test test-localstack lint install host localstack

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -U pip
	$(PY) -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

host:
	bash scripts/setup-host.sh

# LocalStack in its own venv (.venv-localstack, Python >= 3.13): the second AWS backend of the tests.
localstack:
	bash scripts/setup-localstack.sh >/dev/null

lint: install
	$(VENV)/bin/ruff check .
	bash scripts/check-module-size.sh

serve: install host
	$(PY) -m hummingbird_agent serve --config config.yaml

test: install host localstack lint
	$(PY) -m pytest -q -p no:cacheprovider

AWS_TESTS := tests/events/test_queue_conformance.py tests/events/test_pipeline_moto.py tests/events/test_redelivery.py \
	tests/events/test_queue_tool.py tests/sessions/test_s3_store.py tests/test_localstack_server.py

test-localstack: install localstack
	$(PY) -m pytest -q -p no:cacheprovider $(AWS_TESTS)
