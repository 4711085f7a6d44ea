# Steward: build, generate, lint and test the operator.
#
# Run "make help" for the list of targets. Every tool is pinned below and
# installed into ./bin on first use, so a clean checkout needs only Go.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Where the localkube-built control plane (etcd, kube-apiserver, kubectl)
# lives. envtest finds the binaries through KUBEBUILDER_ASSETS.
LOCALKUBE_DIR ?= $(CURDIR)/.cache/localkube
export KUBEBUILDER_ASSETS ?= $(LOCALKUBE_DIR)/bin

# Tool versions. controller-tools v0.21.0 is the release built against
# k8s.io v0.36, the API machinery this module pins; v0.22 and later move to
# k8s.io v0.37.
CONTROLLER_GEN_VERSION ?= v0.21.0
GOLANGCI_LINT_VERSION ?= v2.15.0

# The version stamped into bin/steward.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint

GO ?= go
MODULE := $(shell $(GO) list -m)
# Packages of the operator module; test/e2e runs on a live cluster (make e2e).
UNIT_PACKAGES = $(shell $(GO) list ./... | grep -v '^$(MODULE)/test/e2e')
# Extra flags for go test, e.g. make unit GO_TEST_FLAGS="-race -v".
GO_TEST_FLAGS ?=
LDFLAGS := -s -w -X $(MODULE)/internal/version.Version=$(VERSION)

# localkube's own packages; its components/ are three-line mains around
# upstream Kubernetes, whose type-checking would dominate lint and vet.
LOCALKUBE_PACKAGES := ./cmd/... ./internal/...

# Files that make generate and make manifests own; make verify fails when
# regenerating them changes anything.
GENERATED_PATHS := 'api/*zz_generated*.go' config/crd config/rbac/role.yaml \
	'internal/framework/*zz_generated*.go' internal/framework/internal/testapi/crd

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage:\n  make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods for the API types in api/ and internal/framework/.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) object paths=./internal/framework/...

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and the manager ClusterRole into config/, and the framework's test CRDs.
	$(CONTROLLER_GEN) rbac:roleName=steward-manager paths=./... \
		output:rbac:artifacts:config=config/rbac
	@# CRDs come from api/ only: the framework's test-only kinds must not
	@# land in config/crd. They are generated next to their types instead.
	$(CONTROLLER_GEN) crd paths=./api/... \
		output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./internal/framework/internal/testapi/... \
		output:crd:artifacts:config=internal/framework/internal/testapi/crd

.PHONY: fmt
fmt: ## Format the Go code of both modules.
	$(GO) fmt ./...
	cd tools/localkube && $(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet on both modules (the e2e suite and the cluster benchmarks included).
	$(GO) vet -tags e2e,bench ./...
	cd tools/localkube && $(GO) vet $(LOCALKUBE_PACKAGES)

.PHONY: lint
lint: golangci-lint ## Run golangci-lint on the operator module and on tools/localkube.
	$(GOLANGCI_LINT) run ./...
	cd tools/localkube && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml $(LOCALKUBE_PACKAGES)

.PHONY: verify
verify: generate manifests fmt ## Check generated files, formatting and go.mod are current, then lint and vet.
	@stale="$$( { git ls-files --modified --others --exclude-standard -- $(GENERATED_PATHS); \
		git diff --name-only -- '*.go'; } | sort -u)"; \
	if [ -n "$$stale" ]; then \
		echo "These files change when regenerated or formatted; run 'make generate manifests fmt' and commit the result:" >&2; \
		echo "$$stale" | sed 's/^/  /' >&2; \
		git --no-pager diff -- $$stale >&2; \
		exit 1; \
	fi
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy; run 'go mod tidy' and commit the result" >&2; exit 1; }
	@cd tools/localkube && $(GO) mod tidy -diff || { echo "tools/localkube/go.mod or go.sum is not tidy; run 'go mod tidy' there and commit the result" >&2; exit 1; }
	@$(MAKE) --no-print-directory lint vet

# BENCH selects what `make bench` runs (a go test -bench pattern), e.g. BENCH=Idle.
BENCH ?= .

##@ Build and test

.PHONY: build
build: ## Build a static bin/steward.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(LOCALBIN)/steward ./cmd/steward

.PHONY: unit
unit: ## Run unit and envtest integration tests (envtest needs KUBEBUILDER_ASSETS; those tests skip without it).
	@if [ ! -x "$(KUBEBUILDER_ASSETS)/kube-apiserver" ]; then \
		echo "note: no kube-apiserver in KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS); envtest integration tests will skip"; \
	fi
	$(GO) test $(GO_TEST_FLAGS) $(UNIT_PACKAGES)

LOCALKUBE := $(LOCALKUBE_DIR)/bin/localkube
KUBECTL := $(LOCALKUBE_DIR)/bin/kubectl
MKIMAGE := $(LOCALKUBE_DIR)/bin/mkimage
IMAGES_DIR := $(CURDIR)/_output/images
OPERATOR_IMAGE ?= localhost/steward:dev
export KUBECONFIG ?= /var/lib/localkube/kubeconfig

.PHONY: localkube
localkube: ## Build localkube and every binary and package the local cluster needs (cached; needs root).
	cd tools/localkube && CGO_ENABLED=0 $(GO) build -trimpath -o $(LOCALKUBE) ./cmd/localkube
	$(LOCALKUBE) build

.PHONY: images
images: localkube build ## Build the operator and ZooKeeper images as docker-archives in _output/images; import them if a cluster is up.
	mkdir -p $(IMAGES_DIR)
	$(MKIMAGE) --tag $(OPERATOR_IMAGE) --file $(LOCALBIN)/steward:/steward:0755 \
		--entrypoint /steward --user 65532:65532 --output $(IMAGES_DIR)/steward.tar
	MKIMAGE=$(MKIMAGE) OUT=$(IMAGES_DIR)/zookeeper.tar images/zookeeper/build.sh
	@if $(LOCALKUBE) status >/dev/null 2>&1; then \
		$(LOCALKUBE) load-image $(IMAGES_DIR)/steward.tar $(IMAGES_DIR)/zookeeper.tar; \
	fi

.PHONY: e2e
e2e: images ## Run the end-to-end suite: it brings a localkube cluster up, tests on it, and brings it down.
	$(GO) test -tags e2e -count=1 -v -timeout 45m ./test/e2e/

.PHONY: test
test: images ## Run every test: unit and envtest integration (both modules), then end to end.
	$(MAKE) --no-print-directory unit
	cd tools/localkube && $(GO) test $(LOCALKUBE_PACKAGES)
	$(MAKE) --no-print-directory e2e

.PHONY: demo
demo: images ## Bring up a local cluster, deploy Steward, create a 3-server ZooKeeper cluster and use it.
	@$(LOCALKUBE) status >/dev/null 2>&1 || $(LOCALKUBE) up --simulated-nodes 2
	$(LOCALKUBE) load-image $(IMAGES_DIR)/steward.tar $(IMAGES_DIR)/zookeeper.tar
	@# The image tag stays the same across builds, so an existing manager is
	@# restarted to pick up the image just loaded.
	@if $(KUBECTL) -n steward-system get deployment/steward-controller-manager >/dev/null 2>&1; then \
		$(KUBECTL) apply -k config/default && \
		$(KUBECTL) -n steward-system rollout restart deployment/steward-controller-manager; \
	else \
		$(KUBECTL) apply -k config/default; \
	fi
	$(KUBECTL) -n steward-system rollout status deployment/steward-controller-manager --timeout=3m
	$(KUBECTL) -n steward-system get deployment,pods,leases
	$(KUBECTL) apply -f config/samples/zookeeper_v1alpha1_zookeepercluster.yaml
	$(KUBECTL) wait zk/zk --for=condition=Ready --timeout=5m
	$(KUBECTL) get zk,statefulset,pods,pvc -o wide
	@echo; echo "A client round trip through the client Service (zkCli in a server pod):"
	$(KUBECTL) exec zk-0 -- zk-run cli -server zk-client:2181 create /steward-demo "hello from $$(date +%FT%T)" || true
	$(KUBECTL) exec zk-1 -- zk-run cli -server zk-client:2181 get /steward-demo
	@echo; echo "Steward is running with a Ready ZooKeeper cluster. Use it with: export KUBECONFIG=$(KUBECONFIG); tear it all down with: make down"

.PHONY: bench
bench: images ## Run the benchmarks: ZooKeeper stats gathering (real servers), and create/idle figures on a local cluster.
	@$(LOCALKUBE) status >/dev/null 2>&1 || $(LOCALKUBE) up --simulated-nodes 2
	$(LOCALKUBE) load-image $(IMAGES_DIR)/steward.tar $(IMAGES_DIR)/zookeeper.tar
	$(KUBECTL) apply -k config/default
	$(KUBECTL) -n steward-system rollout restart deployment/steward-controller-manager
	$(KUBECTL) -n steward-system rollout status deployment/steward-controller-manager --timeout=3m
	$(GO) test -tags bench -run '^$$' -bench $(BENCH) -benchtime 1x -timeout 30m -v ./bench/...

.PHONY: down
down: ## Tear the local cluster down, leaving nothing behind.
	$(LOCALKUBE) down

##@ Tools

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into ./bin.
$(CONTROLLER_GEN): $(LOCALBIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
	ln -sf $(notdir $<) $@

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Install golangci-lint into ./bin (built from source; takes a few minutes).
$(GOLANGCI_LINT): $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
	ln -sf $(notdir $<) $@

$(LOCALBIN)/controller-gen-$(CONTROLLER_GEN_VERSION):
	$(call go-install-tool,$@,sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_GEN_VERSION))

$(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION):
	$(call go-install-tool,$@,github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

# go-install-tool installs package $(2) at version $(3) as the file $(1).
# The versioned file name makes a version bump reinstall the tool, and the
# unversioned symlink above always points at the pinned version. go install
# writes into a temporary GOBIN first, so an interrupted build never leaves a
# half-written binary under the versioned name.
define go-install-tool
@set -e; tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
echo "Installing $(2)@$(3)"; \
GOBIN="$$tmp" $(GO) install $(2)@$(3); \
mkdir -p $(LOCALBIN); \
mv "$$tmp/$$(basename $(2))" $(1)
endef
