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
# The lab `make lab-up` starts: 1 controller+dbd, 2 GPU nodes with 8 GPUs each, 1 login node.
LAB_NAME ?= lab
LAB_IMAGE ?= trixie
LAB_NODES ?= ctl:VM.Standard.E5.Flex,gpu1:BM.GPU.H100.8,gpu2:BM.GPU.H100.8,login1:VM.Standard.E5.Flex
LAB_ROLES ?= ctl=controller+dbd,gpu1=compute,gpu2=compute,login1=login

.PHONY: help setup collections-link lint build matrix sanity unit functional pytest test bench bench-inventory bench-lab lab-prepare images lab-up lab-down lab-status demo demo-down

# Each set-up step prints its time; only the demo's image (DEMO_IMAGE) is built.
DEMO_IMAGE ?= trixie
timed = t0=$$(date +%s); $(1); echo "demo set-up: $(2) took $$(( $$(date +%s) - t0 )) s"
demo: collections-link  ## the main job on the built-in lab: lab, OCI emulator, dynamic inventory, Slurm + storage, validation
	@$(call timed,bash tests/setup/bootstrap.sh,packages and venv)
	@$(call timed,bash tests/lab/host_prepare.sh,podman and host fixes)
	@$(call timed,python tests/lab/images.py $(DEMO_IMAGE),the $(DEMO_IMAGE) lab image)
	DEMO_IMAGE=$(DEMO_IMAGE) python tests/demo/demo.py up

demo-down:  ## remove everything `make demo` started (emulator, lab containers, network, volume)
	python tests/demo/demo.py down

help:  ## list the targets
	@awk -F ':.*## ' '/^[a-z-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup:  ## install Debian packages and the pinned venv (.venv); idempotent
	bash tests/setup/bootstrap.sh

collections-link:
	@mkdir -p build/collections/ansible_collections/oci_gpu
	@ln -sfn $(REPO) build/collections/ansible_collections/oci_gpu/cluster

lint: setup collections-link  ## ruff, yamllint, ansible-lint (production profile), changelog fragment check
	ruff check .
	ruff format --check .
	yamllint --strict .
	ansible-lint --strict
	python tests/setup/changelog_check.py

build: setup  ## build the collection, install it into an empty path, ansible-doc every plugin
	bash tests/setup/build_check.sh

# ansible-core 2.17 and 2.18, side by side in their own venvs (build/core-matrix): build, the
# version-specific sanity tests and chosen functional tests (tests/setup/core_matrix_tests.txt): 2 to 3 minutes.
matrix: setup collections-link  ## build + install + ansible-doc, sanity and chosen functional tests under ansible-core 2.17 and 2.18
	bash tests/setup/core_matrix.sh

sanity: setup  ## ansible-test sanity (Python 3.11, ansible-test-managed venvs, no docker)
	bash tests/setup/sanity.sh

unit: setup collections-link  ## unit tests only: none starts Ansible (fast)
	pytest -n 2 tests/unit -q $(PYTEST_ARGS)

functional: setup collections-link  ## functional tests only: those that start Ansible (ansible, ansible-playbook...)
	pytest -n 2 tests/functional -q $(PYTEST_ARGS)

lab-prepare: setup  ## prepare this host for the podman lab (podman, debootstrap, two host fixes)
	bash tests/lab/host_prepare.sh

images: lab-prepare  ## build the lab's base images (bookworm, trixie); a no-op when cached
	python tests/lab/images.py trixie bookworm

lab-up: images collections-link  ## start the lab alone (LAB_NAME, LAB_IMAGE, LAB_NODES, LAB_ROLES)
	tests/lab/lab up --name $(LAB_NAME) --image $(LAB_IMAGE) --nodes $(LAB_NODES) --roles $(LAB_ROLES)

lab-down:  ## remove the lab: its containers, network, state and IMDS server
	tests/lab/lab down --name $(LAB_NAME)

lab-status:  ## show the running labs
	tests/lab/lab status

# The lab and molecule scenarios are part of the test: a host that cannot run them fails.
# The unit and the functional tests run on two workers (pytest-xdist: the functional ones start
# Ansible subprocesses and take a core each); the integration tests run in two streams at once, each
# scenario and lab test on its own containers and network (tests/setup/integration.sh says why and how).
# Exit 5 is "no test selected" (a PYTEST_ARGS -k that matches only some of the three).
pytest: collections-link
	OCI_GPU_LAB_REQUIRED=1 pytest -n 2 --durations=12 tests/unit $(PYTEST_ARGS) || [ $$? -eq 5 ]
	OCI_GPU_LAB_REQUIRED=1 pytest -n 2 --durations=12 tests/functional $(PYTEST_ARGS) || [ $$? -eq 5 ]
	bash tests/setup/integration.sh $(PYTEST_ARGS)

test: setup lint build matrix sanity images pytest  ## every check CI runs, failing on the first error

bench: setup collections-link  ## every benchmark; each prints one JSON line per scenario
	@for b in tests/bench/bench_*.py; do python "$$b"; done

bench-inventory: setup collections-link  ## the inventory benchmark alone (S, M, L, M-throttled, M-base)
	python tests/bench/bench_inventory.py

# The collection bench-lab measures side by side with this checkout: the last main before the lab
# moved to SSH and the configure step to one call per node (bump it at each release).
BENCH_LAB_BASE ?= 56bf691
bench-lab: images collections-link  ## the demo's cluster: first converge and rerun beside a facts-only play, now and at BENCH_LAB_BASE (needs podman)
	BENCH_LAB_BASE=$(BENCH_LAB_BASE) python tests/bench/lab_bench.py
