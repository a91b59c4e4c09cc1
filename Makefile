# The README's two commands, `make demo` and `make test`, do all set-up.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup demo demo-nodes conformance test lint proto crds manifests image bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/mchub demo

# Three pytest processes at once (tests/run_suite.py); `pytest` alone runs the same tests in one.
test: setup lint
	$(BIN)/python -m tests.run_suite -q -p no:cacheprovider --durations=25

lint: setup
	$(BIN)/buf lint
	$(BIN)/buf breaking proto --against tests/compat/previous_proto
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest -q -p no:cacheprovider tests/unit/test_layering.py

proto: setup
	$(BIN)/python hack/gen_proto.py

crds: setup
	$(BIN)/python hack/gen_crds.py

manifests: setup
	$(BIN)/python hack/render_manifests.py

# deploy/Dockerfile with buildah or podman, on a base made from Debian packages
# (mmdebstrap); prints the OCI archive's path last. With Docker:
# docker build -f deploy/Dockerfile -t mchub:latest .
image:
	hack/build-image

# The demo's ClusterSet on real nodes (root; ../shared/envtest, containerd, ...):
# the image built and loaded, mchub installed as deploy/INSTALL.md says, and an
# east Pod fetching a west Pod's answer. DIR is kept running until
# `python -m hack.nodeset down DIR`.
NODES_DIR ?= /tmp/mchub-demo-nodes
demo-nodes: setup
	$(BIN)/python -m hack.nodeset demo $(NODES_DIR)

# The upstream mcs-api conformance suite (../shared/mcs-conformance) on a
# ClusterSet of real clusters with nodes, mchub installed as a user does;
# report.yaml, report.html and the log land in test-artifacts/conformance/.
# CONFORMANCE_DIR: a ClusterSet `python -m hack.nodeset up DIR` left running.
CONFORMANCE_DIR ?= /tmp/mchub-conformance
conformance: setup
	$(BIN)/python -m hack.nodeset.conformance $(CONFORMANCE_DIR)

bench: setup
	$(BIN)/python bench/hub_fanout.py --json bench/results/hub_fanout.json
	$(BIN)/python bench/hub_scale.py --watch single --memory-exports 100000 --json bench/results/hub_scale_100.json --plot bench/results/hub_scale_100.png
	$(BIN)/python bench/hub_scale.py --members 1000 --json bench/results/hub_scale_1000.json --plot bench/results/hub_scale_1000.png
	$(BIN)/python bench/propagation.py --json bench/results/propagation.json
	$(BIN)/python bench/datapath.py > bench/results/datapath.json
	$(BIN)/python bench/gateways.py --rounds 3 --json bench/results/gateways.json
	$(BIN)/python bench/clusterset_dns.py --json bench/results/dns.json
	$(BIN)/python bench/policy_datapath.py > bench/results/policy_datapath.json
	$(BIN)/python -m bench.label_identities --json bench/results/label_identities.json

clean:
	rm -rf $(VENV) mchub-data .pytest_cache .mypy_cache .ruff_cache
