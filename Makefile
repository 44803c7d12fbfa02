# oci_gpu.cluster — entry points. `make test` is what CI runs (.ci/run calls exactly it).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

REPO := $(CURDIR)
VENV := $(REPO)/.venv
export PATH := $(VENV)/bin:$(PATH)
# Tests and ad-hoc runs find this checkout as oci_gpu.cluster through a symlink tree;
# ansible.posix, community.general, kubernetes.core come from the `ansible` package.
export ANSIBLE_COLLECTIONS_PATH := $(REPO)/build/collections
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH := true
PYTEST_ARGS ?=

.PHONY: help setup collections-link lint build sanity unit pytest test bench

help:  ## list the targets
	@awk -F ':.*## ' '/^[a-z-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup:  ## install Debian packages and the pinned venv (.venv); idempotent
	bash tests/setup/bootstrap.sh

collections-link:
	@mkdir -p build/collections/ansible_collections/oci_gpu
	@ln -sfn $(REPO) build/collections/ansible_collections/oci_gpu/cluster

lint: setup collections-link  ## ruff, yamllint, ansible-lint (production profile)
	ruff check .
	ruff format --check .
	yamllint --strict .
	ansible-lint --strict

build: setup  ## build the collection, install it into an empty path, ansible-doc every plugin
	bash tests/setup/build_check.sh

sanity: setup  ## ansible-test sanity (Python 3.11, ansible-test-managed venvs, no docker)
	bash tests/setup/sanity.sh

unit: setup collections-link  ## unit tests only (fast)
	pytest tests/unit -q $(PYTEST_ARGS)

pytest: collections-link
	pytest $(PYTEST_ARGS)

test: setup lint build sanity pytest  ## every check CI runs, failing on the first error

bench: setup collections-link  ## every benchmark; each prints one JSON line per scenario
	@for b in tests/bench/bench_*.py; do python "$$b"; done
