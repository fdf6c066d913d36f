# bosun — build, test and run targets. `make help` lists them.

SHELL := /usr/bin/env bash -o errexit -o nounset -o pipefail
GO ?= go
OUT := _output
BIN := $(OUT)/bin
BINARIES := bosun-controller-manager bosun-daemon kubectl-bosun
STAGING := staging/src/github.com/bosun-dev
STAGING_MODULES := $(STAGING)/api $(STAGING)/client-go
INTEGRATION_TIMEOUT ?= 40m
# Integration test packages run two at a time: each spends most of its time waiting on its
# own kube-apiserver and managers (load average about 2 on 2 cores), and two at once halve
# the phase. INTEGRATION_PARALLEL=1 runs one package at a time.
INTEGRATION_PARALLEL ?= 2
E2E_TIMEOUT ?= 20m
BENCH_FLAGS ?=
FUZZTIME ?= 1m
FUZZFLAGS ?=
KRUISE_E2E_FLAGS ?=
LOCAL_UP_FLAGS ?=
# The part of OpenKruise's suite `make test` runs: its specs expected to pass for these
# labels. The CloneSet specs, and the ContainerRecreateRequest ones (each recreates
# containers of a CloneSet's pod), would take CI past its hour; `make test-kruise-e2e`
# runs them. bosun's own test/e2e recreates containers on the real node in CI.
CI_KRUISE_E2E_LABELS := DaemonSet || PodUnavailableBudget || PullImage || PullImages
# The part of it that runs again against bosun installed inside the cluster (its images, its
# Helm chart): the budget's specs go through the pod and budget webhooks, which the API server
# then reaches through the Service.
IN_CLUSTER_KRUISE_E2E_LABELS := PodUnavailableBudget
TAKEOVER_FLAGS ?=
# The end-to-end cases that run again on a cluster with bosun installed inside it: the install
# itself (leader election among pods, webhooks through the Service), and bosun-daemon as a
# pod recreating a container and pulling an image.
IN_CLUSTER_E2E_TESTS := ^(TestInClusterInstall|TestContainerRecreateRequestRestartsAContainer|TestImagePullJobPrePullsOntoTheNode)$$

# Stamped into the binaries; `--version` prints it.
VERSION ?= v0.1.0-dev
GIT_COMMIT := $(shell git rev-parse --verify --quiet HEAD 2>/dev/null || echo unknown)
VERSION_PKG := k8s.io/component-base/version
LDFLAGS := -X $(VERSION_PKG).gitVersion=$(VERSION) -X $(VERSION_PKG).gitCommit=$(GIT_COMMIT) \
	-X $(VERSION_PKG).buildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ) \
	-X $(VERSION_PKG)/verflag.programName=bosun

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

# `make images` pushes to REGISTRY, host[:port]/path: over plain HTTP to a registry on loopback,
# HTTPS to any other (an explicit http:// or https:// decides otherwise); credentials come from BOSUN_REGISTRY_USERNAME/BOSUN_REGISTRY_PASSWORD
# or ~/.docker/config.json.
REGISTRY ?=
IMAGE_TAG ?= $(VERSION)

.PHONY: images
images: ## Build reproducible OCI images of both binaries without a container engine and push them to REGISTRY as <REGISTRY>/<binary>:<IMAGE_TAG> (default VERSION); prints each by digest.
	$(GO) run ./hack/images -registry='$(REGISTRY)' -tag='$(IMAGE_TAG)' -version='$(VERSION)' -commit='$(GIT_COMMIT)'

.PHONY: build
build: ## Build bosun-controller-manager, bosun-daemon and the kubectl plugin kubectl-bosun into _output/bin (static, as in the images: `make images` then links only).
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./cmd/,$(BINARIES))

# The phases of `make test`, in order; each one's time is printed, so that a CI log shows
# where the hour goes.
TEST_PHASES := verify test-unit test-integration test-e2e test-kruise-e2e-ci

.PHONY: test
test: ## Everything CI runs: verify, unit, integration, end-to-end tests and OpenKruise's suite (its specs expected to pass).
	@began=$$(date +%s); for phase in $(TEST_PHASES); do \
	  start=$$(date +%s); \
	  if ! $(MAKE) --no-print-directory $$phase; then \
	    echo "make test: $$phase failed after $$(( $$(date +%s) - start )) s ($$(( $$(date +%s) - began )) s in all)"; exit 1; \
	  fi; \
	  echo "make test: $$phase took $$(( $$(date +%s) - start )) s ($$(( $$(date +%s) - began )) s in all)"; \
	done

.PHONY: test-kruise-e2e-ci
test-kruise-e2e-ci: ## The share of OpenKruise's suite `make test` runs: specs expected to pass, labels CI_KRUISE_E2E_LABELS, v1beta1 files skipped.
	$(MAKE) test-kruise-e2e KRUISE_E2E_FLAGS="-skip-without-node -expected-passes-only -without-fresh-nodes -skip-file=apps/v1beta1/ -label-filter='$(CI_KRUISE_E2E_LABELS)' $(KRUISE_E2E_FLAGS)"

.PHONY: test-kruise-e2e-in-cluster
test-kruise-e2e-in-cluster: ## OpenKruise's specs of IN_CLUSTER_KRUISE_E2E_LABELS (expected to pass) against bosun installed inside the local cluster from its images and Helm chart (as root; not in `make test`, which stays within CI's hour: about 6 minutes).
	$(MAKE) test-kruise-e2e KRUISE_E2E_FLAGS="-skip-without-node -expected-passes-only -without-fresh-nodes -skip-file=apps/v1beta1/ -in-cluster -label-filter='$(IN_CLUSTER_KRUISE_E2E_LABELS)' $(KRUISE_E2E_FLAGS)"

.PHONY: test-unit
test-unit: ## Unit tests of the main module and the staging modules.
	$(GO) test -race ./cmd/... ./pkg/... ./hack/...
	@for m in $(STAGING_MODULES); do (cd $$m && GOFLAGS=-mod=mod $(GO) test ./...); done

.PHONY: fuzz
fuzz: ## Run every Go fuzz target (func Fuzz* under cmd/ and pkg/) for FUZZTIME each (default 1m), one after another (not in `make test`; FUZZFLAGS=-parallel=1 on a shared machine).
	FUZZTIME=$(FUZZTIME) FUZZFLAGS='$(FUZZFLAGS)' GO=$(GO) hack/fuzz.sh

.PHONY: test-integration
test-integration: test-servers ## Integration tests against a real etcd + kube-apiserver.
	BOSUN_INTEGRATION=1 $(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) -p $(INTEGRATION_PARALLEL) $$($(GO) list ./test/... | grep -v -e /test/e2e -e /test/verify)

.PHONY: test-verify-scripts
test-verify-scripts: ## Check that each verify script fails on a scratch copy of the tree with its input made stale (not in `make test`: it runs code generation four times; run it after changing hack/verify-*).
	BOSUN_INTEGRATION=1 $(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) ./test/verify/

.PHONY: test-e2e
test-e2e: test-servers build ## End-to-end tests on a local cluster with a real node (as root; skipped with the reason otherwise), then on one with bosun installed inside it from its images and Helm chart.
	BOSUN_E2E=1 $(GO) test -count=1 -timeout $(E2E_TIMEOUT) -p 1 -v ./test/e2e/...
	BOSUN_E2E=1 BOSUN_E2E_IN_CLUSTER=1 $(GO) test -count=1 -timeout $(E2E_TIMEOUT) -v -run '$(IN_CLUSTER_E2E_TESTS)' ./test/e2e/

.PHONY: test-kruise-e2e
test-kruise-e2e: test-servers build ## OpenKruise's own e2e suite against bosun on a local cluster (as root); fails unless it matches test/kruise-e2e/expectations.txt.
	$(GO) run ./test/kruise-e2e $(KRUISE_E2E_FLAGS)

.PHONY: test-takeover
test-takeover: test-servers build ## Hand a real OpenKruise 1.9, then 1.8 (kruise-manager, kruise-daemon; TAKEOVER_FLAGS=-from=1.8 for one) over to bosun on a local cluster and check nothing changes (as root; skipped with the reason otherwise).
	$(GO) run ./test/takeover -skip-without-node $(TAKEOVER_FLAGS)

.PHONY: build-kruise
build-kruise: ## Build kruise-manager, kruise-daemon and OpenKruise's e2e suite (v1.9.0) from the Go module proxy into _output/tools/bin (cached).
	hack/build-kruise.sh

.PHONY: test-servers
test-servers: ## Build etcd, kube-apiserver, kubectl, kube-controller-manager, kube-scheduler, kubelet, kube-proxy and helm from the Go module proxy (cached).
	hack/build-test-servers.sh
	hack/build-helm.sh

.PHONY: bench
bench: build test-servers ## Benchmark bosun against upstream kube-controller-manager and kruise-manager (not in `make test`; BENCH_FLAGS=-help lists flags).
	hack/build-kruise.sh kruise-manager
	$(GO) run ./test/bench $(BENCH_FLAGS)

.PHONY: verify
verify: ## gofmt, the controllers' anatomy, go vet, and the generated code, CRD, Helm chart and vendor checks.
	hack/verify-gofmt.sh
	hack/verify-anatomy.sh
	$(GO) vet ./...
	@for m in $(STAGING_MODULES); do (cd $$m && GOFLAGS=-mod=mod $(GO) vet ./...); done
	hack/verify-codegen.sh
	hack/verify-crds.sh
	hack/verify-chart.sh
	hack/verify-vendor.sh
	hack/verify-docs.sh

.PHONY: update
update: ## Regenerate code, CRDs, the Helm chart and vendor/ after changing types, config/ or dependencies.
	hack/update-codegen.sh
	hack/update-crds.sh
	hack/update-chart.sh
	hack/update-vendor.sh
	hack/update-docs.sh

.PHONY: local-up
local-up: test-servers build ## As root: a local cluster with a real node (containerd + kubelet) and bosun; prints how to use it (LOCAL_UP_FLAGS=-in-cluster installs bosun inside it from its images and Helm chart).
	hack/install-deps.sh
	$(GO) run ./hack/local-up $(LOCAL_UP_FLAGS)

.PHONY: clean
clean: ## Remove build output (keeps the cached test servers).
	rm -rf $(BIN)
