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
# Extra flags for `localkube up` where a target brings a cluster up, e.g.
# --dns-caches-cluster-domain (docs/localkube.md).
LOCALKUBE_UP_FLAGS ?=
export KUBEBUILDER_ASSETS ?= $(LOCALKUBE_DIR)/bin

# Tool versions. controller-tools v0.21.0 is the release built against
# k8s.io v0.36, the API machinery this module pins; v0.22 and later move to
# k8s.io v0.37.
CONTROLLER_GEN_VERSION ?= v0.21.0
# golangci-lint (v2.15.0) and the Kube API Linter plugin compiled into it
# are pinned by tools/golangci-lint/go.mod.
PROTOC_GEN_GO_VERSION ?= v1.36.11
PROTOC_GEN_GO_GRPC_VERSION ?= v1.6.2
# Helm, built from its Go module: the chart's lint, golden tests, the e2e
# install and the demo use this binary, not one on the PATH.
HELM_VERSION ?= v3.22.0
# The Kubernetes version helm template renders for (offline, helm assumes an
# old one): the version localkube runs.
KUBE_VERSION ?= 1.36.0

# The version stamped into bin/steward.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint
PROTOC_GEN_GO ?= $(LOCALBIN)/protoc-gen-go
PROTOC_GEN_GO_GRPC ?= $(LOCALBIN)/protoc-gen-go-grpc
export HELM ?= $(LOCALBIN)/helm

GO ?= go
MODULE := $(shell $(GO) list -m)
# Packages of the operator module; test/e2e runs on a live cluster (make e2e).
# With SYSTEMS (not all), those systems' packages only: internal/<system>/...
# and api/<system>/...
ALL_UNIT_PACKAGES = $(shell $(GO) list ./... | grep -v '^$(MODULE)/test/e2e')
UNIT_PACKAGES = $(if $(filter-out all,$(SYSTEM_LIST)),$(filter $(foreach s,$(SYSTEM_LIST),$(MODULE)/internal/$(s) \
	$(MODULE)/internal/$(s)/% $(MODULE)/api/$(s)/%),$(ALL_UNIT_PACKAGES)),$(ALL_UNIT_PACKAGES))
# Extra flags for go test, e.g. make unit GO_TEST_FLAGS="-race -v".
GO_TEST_FLAGS ?=
LDFLAGS := -s -w -X $(MODULE)/internal/version.Version=$(VERSION)

# localkube's own packages; its components/ are three-line mains around
# upstream Kubernetes, whose type-checking would dominate lint and vet.
LOCALKUBE_PACKAGES := ./cmd/... ./internal/...

# Files that make generate and make manifests own; make verify fails when
# regenerating them changes anything.
GENERATED_PATHS := 'api/*zz_generated*.go' config/crd charts/steward/files charts/steward/crds config/default \
	charts/steward/values.schema.json charts/steward/Chart.yaml \
	'internal/framework/*zz_generated*.go' internal/framework/internal/testapi/crd \
	'internal/gpss/gpssapi/*.pb.go' .golangci.yml

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage:\n  make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: controller-gen protos ## Generate DeepCopy methods for the API types in api/ and internal/framework/, and the GPSS API's Go code.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) object paths=./internal/framework/...

# GPSS's gRPC APIs (internal/gpss/gpssapi), compiled by Debian's protoc with
# the pinned Go plugins.
PROTOS := $(wildcard internal/gpss/gpssapi/*/*.proto)

.PHONY: protos
protos: protoc $(PROTOC_GEN_GO) $(PROTOC_GEN_GO_GRPC) ## Generate the Go code of the GPSS gRPC APIs from their .proto files.
	protoc -I internal/gpss/gpssapi -I /usr/include \
		--plugin=protoc-gen-go=$(PROTOC_GEN_GO) --plugin=protoc-gen-go-grpc=$(PROTOC_GEN_GO_GRPC) \
		--go_out=internal/gpss/gpssapi --go_opt=paths=source_relative \
		--go-grpc_out=internal/gpss/gpssapi --go-grpc_opt=paths=source_relative \
		$(patsubst internal/gpss/gpssapi/%,%,$(PROTOS))

.PHONY: manifests
manifests: controller-gen helm ## Generate CRDs and their kustomization, the manager's ClusterRole, the webhook configurations, the chart's systems, config/default from the chart, the framework's test CRDs, and .golangci.yml's generated depguard rules.
	@# The ClusterRole's rules and the webhooks are read by the chart's
	@# templates from charts/steward/files.
	$(CONTROLLER_GEN) rbac:roleName=steward-manager webhook paths=./... \
		output:rbac:artifacts:config=charts/steward/files \
		output:webhook:artifacts:config=charts/steward/files
	@# CRDs come from api/ only: the framework's test-only kinds must not
	@# land in config/crd. They are generated next to their types instead.
	@# bases/ is emptied first so that a kind removed from api/ goes too.
	rm -f config/crd/bases/*.yaml
	$(CONTROLLER_GEN) crd paths=./api/... \
		output:crd:artifacts:config=config/crd/bases
	@# kustomize's list of the CRDs: every file in bases/.
	{ echo "# Generated by 'make manifests': the CRDs of Steward's API groups, every file in bases/."; \
	  echo "resources:"; \
	  for f in $$(cd config/crd/bases && LC_ALL=C ls *.yaml); do echo "  - bases/$$f"; done; } > config/crd/kustomization.yaml
	@# The chart ships the same CRDs, in Helm's crds/ directory.
	rm -f charts/steward/crds/*.yaml
	cp config/crd/bases/*.yaml charts/steward/crds/
	@# The systems the chart's values accept, and its keywords, from
	@# internal/systems.
	$(GO) run ./hack/chartgen charts/steward
	@# The depguard rules that follow from the tree: one per system, and
	@# those of the packages' roles (+steward:role markers).
	$(GO) run ./hack/lintgen
	@# config/default (kustomize) is the chart rendered with its defaults,
	@# so the two installs cannot drift apart.
	{ echo "# Generated by 'make manifests' from charts/steward with its default values: do not edit."; \
	  $(HELM) template steward charts/steward --namespace steward-system --kube-version $(KUBE_VERSION); } > config/default/steward.yaml
	$(CONTROLLER_GEN) crd paths=./internal/framework/internal/testapi/... \
		output:crd:artifacts:config=internal/framework/internal/testapi/crd

.PHONY: fmt
fmt: ## Format the Go code of the operator's module, tools/localkube and tools/mo-agent.
	$(GO) fmt ./...
	cd tools/localkube && $(GO) fmt ./...
	@# gofmt itself for mo-agent: go fmt would resolve its MatrixOne imports.
	"$$($(GO) env GOROOT)/bin/gofmt" -l -w tools/mo-agent

.PHONY: vet
vet: ## Run go vet on the operator's module (the e2e suite and the cluster benchmarks included), tools/localkube and tools/mo-agent/wire.
	$(GO) vet -tags e2e,bench ./...
	cd tools/localkube && $(GO) vet $(LOCALKUBE_PACKAGES)
	cd tools/mo-agent/wire && $(GO) vet ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint on the operator module, tools/localkube and tools/mo-agent/wire, and prove the guard rails still catch violations.
	$(GOLANGCI_LINT) run ./...
	cd tools/localkube && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml $(LOCALKUBE_PACKAGES)
	@# mo-agent's own package imports MatrixOne (cgo, its C library): it is
	@# compiled and its render tests run by images/matrixone/build.sh, not
	@# here; the contract it shares with the operator is linted here.
	cd tools/mo-agent/wire && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...
	@# Each import and complexity rule must still fail a deliberate
	@# violation (in a copy of the tree): a rule that matches nothing
	@# would pass silently.
	GOLANGCI_LINT=$(GOLANGCI_LINT) test/lint/guardrails_test.sh

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
	@cd tools/mo-agent/wire && $(GO) mod tidy -diff || { echo "tools/mo-agent/wire/go.mod is not tidy; run 'go mod tidy' there and commit the result" >&2; exit 1; }
	@cd tools/golangci-lint && $(GO) mod tidy -diff || { echo "tools/golangci-lint/go.mod or go.sum is not tidy; run 'go mod tidy' there and commit the result" >&2; exit 1; }
	@$(MAKE) --no-print-directory lint vet

# BENCH selects what `make bench` runs (a go test -bench pattern), e.g. BENCH=Idle.
BENCH ?= .
# BENCH_PACKAGES are the packages `make bench` runs: every one under bench/
# but bench/scale, which runs for long and has its own target.
BENCH_PACKAGES ?= $(filter-out %/bench/scale,$(shell $(GO) list -tags bench ./bench/...))
# SIMULATED_POD_CAPACITY is the pods each of the two simulated nodes takes
# when a benchmark target brings a cluster up: room for a thousand
# MatrixOne clusters of five pods (bench/scale's largest).
SIMULATED_POD_CAPACITY ?= 2600
# make bench-scale runs SCALE_BENCH (a -bench pattern; Scale/ZooKeeper for
# one system, Scale/Mixed for all four at once, an equal share each) with
# SCALE_CLUSTERS clusters of each run held idle for
# SCALE_IDLE, with Steward installed with SCALE_HELM_FLAGS (the chart's
# memory limit is not sized for a thousand clusters), and writes the
# operator's Go profiles of each phase into SCALE_PROFILES (empty: none).
SCALE_BENCH ?= Scale
SCALE_CLUSTERS ?= 1000
SCALE_IDLE ?= 2m
SCALE_PROFILES ?= $(CURDIR)/.cache/bench/scale-profiles
SCALE_HELM_FLAGS ?= --set resources.limits.memory=2Gi

##@ Build and test

.PHONY: build
build: ## Build a static bin/steward and the kubectl plugin bin/kubectl-steward.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(LOCALBIN)/steward ./cmd/steward
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(LOCALBIN)/kubectl-steward ./cmd/kubectl-steward

.PHONY: plugin-dist
plugin-dist: ## Build the kubectl plugin's release archives (linux and darwin, amd64 and arm64; PLATFORMS narrows) and their SHA256SUMS into _output/dist.
	hack/plugin-dist.sh $(VERSION) '$(LDFLAGS)'

.PHONY: unit
unit: helm ## Run unit and envtest integration tests, building no image (envtest needs KUBEBUILDER_ASSETS; those tests skip without it; real-server tests are left to rootfs-tests, but S3's run when its server is already built); SYSTEMS=zookeeper runs those systems' packages only.
	@if [ ! -x "$(KUBEBUILDER_ASSETS)/kube-apiserver" ]; then \
		echo "note: no kube-apiserver in KUBEBUILDER_ASSETS=$(KUBEBUILDER_ASSETS); envtest integration tests will skip"; \
	fi
	@$(if $(filter-out all,$(SYSTEM_LIST)),echo "note: SYSTEMS=$(SYSTEMS) runs those systems' packages only; the shared ones (internal/framework, api/common, test/wiring, test/chart, cmd, hack) run with make unit alone")
	ZKTEST_DEFER="make rootfs-tests" S3TEST_DEFER="make rootfs-tests" $(GO) test $(GO_TEST_FLAGS) $(UNIT_PACKAGES)

LOCALKUBE := $(LOCALKUBE_DIR)/bin/localkube
KUBECTL := $(LOCALKUBE_DIR)/bin/kubectl
MKIMAGE := $(LOCALKUBE_DIR)/bin/mkimage
IMAGES_DIR := $(CURDIR)/_output/images
export KUBECONFIG ?= /var/lib/localkube/kubeconfig

# SYSTEMS narrows images, e2e and wait-admission to some systems, e.g.
# make e2e SYSTEMS=zookeeper (a comma-separated list); empty means every one,
# previews included (CI tests them all); "all" is the operator's all, every
# system but the previews.
SYSTEMS ?=
comma := ,
SYSTEM_LIST := $(subst $(comma), ,$(SYSTEMS))
# PREVIEW_SYSTEMS are the systems "all" leaves out (internal/systems
# Preview), read from the chart, where make manifests writes them
# (hack/chartgen); test/wiring checks the two agree.
PREVIEW_SYSTEMS := $(shell sed -n 's/.*\$$preview := list \(.*\) -}}.*/\1/p' charts/steward/templates/_helpers.tpl | tr -d '"')
# IMAGES are the images/<name>/build.sh to build: the operator's (steward)
# and every system's (images/<system>, or images/<system>-<part> for a
# system with several); with SYSTEMS, the operator's and those systems'.
# STAGED_IMAGES are built only when named (make images IMAGES=<name>): an
# image no test uses yet, which CI should not pay for (none now).
# SYSTEM_IMAGES_<system> are images a system's tests and demo run besides
# its own (images/<system>*): built with SYSTEMS naming the system, left out
# of DEFAULT_IMAGES when the system is a preview, and of DEMO_IMAGES when
# make demo leaves the system out. MatrixOne's is versitygw,
# the local cluster's S3 server (hack/versitygw.sh).
# SYSTEM_TEST_IMAGES_<system> are images only a system's e2e specs run:
# built with SYSTEMS naming the system, never in DEFAULT_IMAGES (make demo
# does not run them). OceanBase's tenant-data spec runs versitygw.
# DEFAULT_IMAGES are the operator's and those of the systems the chart runs
# by default (systems: all): what make images SYSTEMS=all builds.
# DEMO_LEAVES_OUT are default systems whose images make demo does not build:
# it shows a ZooKeeper cluster, and MatrixOne's image builds MatrixOne from
# its Go module (4 to 15 minutes on 2 cores the first time), which make
# demo-matrixone does. DEMO_IMAGES are the rest of DEFAULT_IMAGES: what make
# demo loads (ZooKeeper's, GPSS's and OceanBase's, which the README's
# samples run).
# TEST_IMAGES are images only tests run (a simulator that misbehaves on
# purpose): e2e builds them, make demo does not.
STAGED_IMAGES :=
SYSTEM_IMAGES_matrixone := versitygw
SYSTEM_TEST_IMAGES_oceanbase := versitygw
TEST_IMAGES := gpss-simulator-broken
ALL_IMAGES := $(filter-out $(STAGED_IMAGES),$(sort $(patsubst images/%/build.sh,%,$(wildcard images/*/build.sh))))
DEMO_LEAVES_OUT := matrixone
# system_images are the images of the systems $(1) names: images/<system>*
# and SYSTEM_IMAGES_<system>.
system_images = $(1) $(1:%=%-%) $(foreach s,$(1),$(SYSTEM_IMAGES_$(s)))
DEFAULT_IMAGES := $(filter-out $(call system_images,$(PREVIEW_SYSTEMS)) $(TEST_IMAGES),$(ALL_IMAGES))
DEMO_IMAGES := $(filter-out $(call system_images,$(DEMO_LEAVES_OUT)),$(DEFAULT_IMAGES))
IMAGES ?= $(if $(SYSTEM_LIST),$(sort $(filter steward $(SYSTEM_LIST) $(SYSTEM_LIST:%=%-%) $(foreach s,$(SYSTEM_LIST),$(SYSTEM_IMAGES_$(s)) $(SYSTEM_TEST_IMAGES_$(s))),$(ALL_IMAGES)) \
	$(if $(filter all,$(SYSTEM_LIST)),$(DEFAULT_IMAGES))),$(ALL_IMAGES))
IMAGE_ARCHIVES = $(IMAGES:%=$(IMAGES_DIR)/%.tar)
# SAMPLES are the objects wait-admission dry-runs: config/samples holds one
# per kind, named <system>_<version>_<kind>.yaml; with SYSTEMS, those
# systems' only.
ALL_SAMPLES := $(sort $(wildcard config/samples/*.yaml))
SAMPLES ?= $(if $(SYSTEM_LIST),$(sort $(filter $(SYSTEM_LIST:%=config/samples/%_%),$(ALL_SAMPLES)) \
	$(if $(filter all,$(SYSTEM_LIST)),$(filter-out $(PREVIEW_SYSTEMS:%=config/samples/%_%),$(ALL_SAMPLES)))),$(ALL_SAMPLES))
# E2E_TIMEOUT bounds the whole suite's run (go test -timeout).
E2E_TIMEOUT ?= 45m
# E2E_DEPTH is how deep make e2e goes: full (every spec) or smoke (each
# selected system's smoke spec: a cluster created, Ready, serving one
# request, deleted; docs/testing.md).
E2E_DEPTH ?= full

.PHONY: localkube
localkube: ## Build localkube and every binary and package the local cluster needs (cached; needs root).
	cd tools/localkube && CGO_ENABLED=0 $(GO) build -trimpath -o $(LOCALKUBE) ./cmd/localkube
	$(LOCALKUBE) build

.PHONY: images
images: localkube build ## Build every images/*/build.sh (SYSTEMS narrows) into _output/images, each only when its inputs changed; import them if a cluster is up.
	IMAGES_DIR=$(IMAGES_DIR) MKIMAGE=$(MKIMAGE) STEWARD_BIN=$(LOCALBIN)/steward hack/images.sh $(IMAGES)
	@if $(LOCALKUBE) status >/dev/null 2>&1; then \
		$(LOCALKUBE) load-image $(IMAGE_ARCHIVES); \
	fi

.PHONY: e2e
e2e: images helm ## Run the end-to-end suite on a localkube cluster it brings up and down, building the images of the systems it tests; SYSTEMS=zookeeper runs those systems' tests only, E2E_DEPTH=smoke their smoke specs only.
	E2E_SYSTEMS=$(SYSTEMS) E2E_DEPTH=$(E2E_DEPTH) E2E_IMAGES_DIR=$(IMAGES_DIR) LOCALKUBE_BIN_DIR=$(LOCALKUBE_DIR)/bin \
		$(GO) test -tags e2e -count=1 -v -timeout $(E2E_TIMEOUT) $(if $(E2E_RUN),-run '$(E2E_RUN)') $(if $(E2E_PARALLEL),-parallel $(E2E_PARALLEL)) ./test/e2e/

# The chaos suite (test/e2e's TestChaos, test/chaos): each selected
# system's cluster under a seeded run of random operations and faults.
# E2E_CHAOS_SEED replays a run (default: the clock, printed),
# E2E_CHAOS_STEPS is its length per system (50), E2E_CHAOS_BUDGET bounds
# each system's time (75m), E2E_CHAOS_PARALLEL=1 runs the systems at once
# (each system's faults then strike the others too).
E2E_CHAOS_SEED ?=
E2E_CHAOS_STEPS ?=
E2E_CHAOS_BUDGET ?=
E2E_CHAOS_PARALLEL ?=

.PHONY: chaos
chaos: ## Run the chaos suite on a localkube cluster it brings up and down: each selected system (SYSTEMS=zookeeper) attacked by E2E_CHAOS_STEPS random operations and faults (50) from E2E_CHAOS_SEED, every invariant checked after each; not part of make test.
	E2E_CHAOS=1 E2E_CHAOS_SEED=$(E2E_CHAOS_SEED) E2E_CHAOS_STEPS=$(E2E_CHAOS_STEPS) E2E_CHAOS_BUDGET=$(E2E_CHAOS_BUDGET) E2E_CHAOS_PARALLEL=$(E2E_CHAOS_PARALLEL) \
		$(MAKE) --no-print-directory e2e E2E_RUN=TestChaos E2E_TIMEOUT=6h E2E_PARALLEL=4

# MATRIXONE_UPGRADE_FROM is the MatrixOne version the upgrade lane starts
# from (test/e2e's moUpgradeFrom says the same): images/matrixone built at
# it, beside the image's own version.
MATRIXONE_UPGRADE_FROM := 1.2.3

.PHONY: e2e-matrixone-upgrade
e2e-matrixone-upgrade: ## Run MatrixOne's upgrade spec alone (a real MatrixOne $(MATRIXONE_UPGRADE_FROM) cluster upgraded under writes), building its second image (5-7 minutes cold); not part of make test.
	$(MAKE) --no-print-directory e2e SYSTEMS=matrixone IMAGES="steward matrixone matrixone-$(MATRIXONE_UPGRADE_FROM) versitygw" \
		E2E_RUN=TestSystems/matrixone/upgrade

# ROOTFS_TEST_PACKAGES are the packages whose tests start real servers:
# ZooKeeper's from the ZooKeeper image's root filesystem
# (internal/zookeeper/zktest), which images/zookeeper/build.sh caches in
# .cache/images, and versitygw, the S3 server (internal/s3/s3test), built
# from images/versitygw's module into the user's cache directory. make unit
# skips the first (ZKTEST_DEFER), even with CI=true: it builds no image; and
# the second unless versitygw is already built (S3TEST_DEFER): its build
# takes about two minutes cold.
REAL_SERVER_HARNESSES = $(MODULE)/internal/zookeeper/zktest $(MODULE)/internal/s3/s3test
ROOTFS_TEST_PACKAGES = $(shell $(GO) list -f '{{.ImportPath}} {{.TestImports}} {{.XTestImports}}' ./internal/... | \
	grep -F $(foreach h,$(REAL_SERVER_HARNESSES),-e '$(h)') | cut -d' ' -f1)
S3TEST_PACKAGE = $(MODULE)/internal/s3/s3test

# s3test's own tests run first, alone: the first of them builds versitygw
# (cached), which would otherwise compete for the cores with the ZooKeeper
# servers of the packages running beside it.
.PHONY: rootfs-tests
rootfs-tests: ## Build ZooKeeper's image and versitygw (both cached), then run the tests that start real servers (ZooKeeper from the image's root filesystem, versitygw); CI=true, so that none skips.
	$(MAKE) --no-print-directory images IMAGES=zookeeper
	CI=true $(GO) test $(GO_TEST_FLAGS) $(S3TEST_PACKAGE)
	CI=true $(GO) test $(GO_TEST_FLAGS) $(filter-out $(S3TEST_PACKAGE),$(ROOTFS_TEST_PACKAGES))

# make test runs the tests that need no image first: the envtest control
# plane (kube-apiserver, etcd) is one of localkube's binaries. Images are
# built after them, by rootfs-tests (ZooKeeper's, and versitygw's binary)
# and make e2e (the rest).
.PHONY: test
test: localkube helm ## Run every test: unit and envtest integration (both modules; no image built), the real-server tests, then end to end.
	$(MAKE) --no-print-directory unit
	cd tools/localkube && $(GO) test $(LOCALKUBE_PACKAGES)
	$(MAKE) --no-print-directory rootfs-tests
	$(MAKE) --no-print-directory e2e

# make demo builds and loads DEMO_IMAGES, the images of the systems the
# chart runs by default but MatrixOne's, which has its own demo.
.PHONY: demo
demo: IMAGES = $(DEMO_IMAGES)
demo: images helm ## Bring up a local cluster, install Steward with its chart, create a 3-server ZooKeeper cluster and use it.
	@$(LOCALKUBE) status >/dev/null 2>&1 || $(LOCALKUBE) up --simulated-nodes 2 $(LOCALKUBE_UP_FLAGS)
	$(LOCALKUBE) load-image $(IMAGE_ARCHIVES)
	@# The image tag stays the same across builds, so an existing manager is
	@# restarted to pick up the image just loaded.
	@installed=$$($(KUBECTL) -n steward-system get deployment/steward-controller-manager -o name 2>/dev/null || true); \
	$(MAKE) --no-print-directory install-chart; \
	if [ -n "$$installed" ]; then \
		$(KUBECTL) -n steward-system rollout restart deployment/steward-controller-manager; \
		$(KUBECTL) -n steward-system rollout status deployment/steward-controller-manager --timeout=3m; \
		$(MAKE) --no-print-directory wait-admission; \
	fi
	$(KUBECTL) -n steward-system get deployment,pods,leases
	$(KUBECTL) apply -f config/samples/zookeeper_v1alpha1_zookeepercluster.yaml
	$(KUBECTL) wait zk/zk --for=condition=Ready --timeout=5m
	$(KUBECTL) get zk,statefulset,pods,pvc -o wide
	@echo; echo "A client round trip through the client Service (zkCli in a server pod):"
	$(KUBECTL) exec zk-0 -- zk-run cli -server zk-client:2181 create /steward-demo "hello from $$(date +%FT%T)" || true
	$(KUBECTL) exec zk-1 -- zk-run cli -server zk-client:2181 get /steward-demo
	@echo; echo "Steward is running with a Ready ZooKeeper cluster. Use it with: export KUBECONFIG=$(KUBECONFIG); tear it all down with: make down"

# The MatrixOne demo, beside make demo: its image builds MatrixOne from its
# Go module (about 15 minutes on 2 cores the first time; cached after), so
# make demo stays quick. It installs Steward with the chart's defaults,
# MatrixOne among them.

.PHONY: demo-matrixone
demo-matrixone: helm ## Bring up a local cluster, install Steward with MatrixOne, start versitygw (S3), create the sample MatrixOneCluster on the sample BucketClaim (real MatrixOne on S3, about 3.7 GiB) and run SQL through its proxy with a MySQL client.
	$(MAKE) --no-print-directory images SYSTEMS=matrixone
	@$(LOCALKUBE) status >/dev/null 2>&1 || $(LOCALKUBE) up --simulated-nodes 2 $(LOCALKUBE_UP_FLAGS)
	$(LOCALKUBE) load-image $(IMAGES_DIR)/steward.tar $(IMAGES_DIR)/matrixone.tar $(IMAGES_DIR)/versitygw.tar
	@installed=$$($(KUBECTL) -n steward-system get deployment/steward-controller-manager -o name 2>/dev/null || true); \
	$(MAKE) --no-print-directory install-chart SYSTEMS=matrixone; \
	if [ -n "$$installed" ]; then \
		$(KUBECTL) -n steward-system rollout restart deployment/steward-controller-manager; \
		$(KUBECTL) -n steward-system rollout status deployment/steward-controller-manager --timeout=3m; \
		$(MAKE) --no-print-directory wait-admission SYSTEMS=matrixone; \
	fi
	KUBECTL=$(KUBECTL) hack/demo-matrixone.sh

# HELM_INSTALL_FLAGS are extra flags for helm upgrade --install, e.g.
# HELM_INSTALL_FLAGS="--set logLevel=debug".
HELM_INSTALL_FLAGS ?=

.PHONY: install-chart
install-chart: helm ## Install (or upgrade) Steward on the cluster KUBECONFIG names with charts/steward, as docs/install.md does.
	$(KUBECTL) apply -f config/default/namespace.yaml
	$(HELM) upgrade --install steward charts/steward --namespace steward-system \
		--wait --timeout 5m $(HELM_INSTALL_FLAGS)
	@$(MAKE) --no-print-directory wait-admission

# A replica is Ready a second or two before the webhook Service routes to it
# (docs/install.md); until then the API server answers "failed calling
# webhook". Server-side dry runs of every sample (one per kind) wait that
# window out.
.PHONY: wait-admission
wait-admission:
	@if [ -z "$(SAMPLES)" ]; then echo "no sample in config/samples for SYSTEMS=$(SYSTEMS)" >&2; exit 1; fi
	@# A sample of a kind that names its cluster or tenant (OBParameter,
	@# OBTenantBackup) is denied for want of it, which a dry run does not
	@# create: the webhook answered, which is what this waits for. kubectl
	@# prints the denial's causes: The OBTenant "t1" is invalid: spec.cluster: Not found.
	@for s in $(SAMPLES); do \
		for i in $$(seq 60); do \
			if out=$$($(KUBECTL) apply --dry-run=server -f $$s 2>&1) || \
				echo "$$out" | tr '\n' ' ' | grep -Eq '(denied the request|is invalid): .*spec\.([a-zA-Z]+\.)?(cluster|tenant|primary|standby): Not found'; then continue 2; fi; \
			sleep 1; \
		done; \
		echo "$$out" >&2; exit 1; \
	done; \
	echo "Steward admits objects of every kind through its webhooks ($(words $(SAMPLES)) samples)"

# BENCH_HELM_FLAGS are extra flags for the benchmarks' install of Steward.
BENCH_HELM_FLAGS ?=

.PHONY: bench-setup
bench-setup: images helm ## Bring up a local cluster with simulated capacity unless one is up, load the images, install Steward for the benchmarks.
	@$(LOCALKUBE) status >/dev/null 2>&1 || $(LOCALKUBE) up --simulated-nodes 2 $(LOCALKUBE_UP_FLAGS) --simulated-pod-capacity $(SIMULATED_POD_CAPACITY)
	$(LOCALKUBE) load-image $(IMAGE_ARCHIVES)
	@# bench/values.yaml: Go's profiles on the metrics port, and every
	@# system with a benchmark, preview ones included; bench/rbac.yaml: the
	@# account the benchmarks read metrics and profiles with.
	$(MAKE) --no-print-directory install-chart HELM_INSTALL_FLAGS="-f $(CURDIR)/bench/values.yaml $(BENCH_HELM_FLAGS)"
	$(KUBECTL) apply -f bench/rbac.yaml
	$(KUBECTL) -n steward-system rollout restart deployment/steward-controller-manager
	$(KUBECTL) -n steward-system rollout status deployment/steward-controller-manager --timeout=3m
	@$(MAKE) --no-print-directory wait-admission

.PHONY: bench
bench: bench-setup ## Run the benchmarks: ZooKeeper stats gathering (real servers), and create/idle figures on a local cluster.
	$(GO) test -tags bench -run '^$$' -bench '$(BENCH)' -benchtime 1x -timeout 30m -v $(BENCH_PACKAGES)

.PHONY: bench-matrixone-upgrade
bench-matrixone-upgrade: IMAGES = steward matrixone matrixone-$(MATRIXONE_UPGRADE_FROM)
bench-matrixone-upgrade: bench-setup ## Run bench/matrixone's BenchmarkUpgrade: MatrixOne $(MATRIXONE_UPGRADE_FROM) upgraded under writes by hand and with Steward, building its second image (5-7 minutes cold).
	BENCH_MO_UPGRADE_FROM=localhost/matrixone:$(MATRIXONE_UPGRADE_FROM) \
		$(GO) test -tags bench -run '^$$' -bench Upgrade -benchtime 1x -timeout 60m -v ./bench/matrixone/

.PHONY: bench-scale
bench-scale: BENCH_HELM_FLAGS += $(SCALE_HELM_FLAGS)
bench-scale: bench-setup ## Run the scale benchmark (bench/scale): SCALE_CLUSTERS clusters (default 1000) on simulated nodes created, idle for SCALE_IDLE, deleted.
	SCALE_CLUSTERS=$(SCALE_CLUSTERS) SCALE_IDLE=$(SCALE_IDLE) SCALE_PROFILES=$(SCALE_PROFILES) \
		$(GO) test -tags bench -run '^$$' -bench '$(SCALE_BENCH)' -benchtime 1x -timeout 4h -v ./bench/scale/

.PHONY: down
down: ## Tear the local cluster down, leaving nothing behind.
	$(LOCALKUBE) down

##@ Tools

.PHONY: protoc
protoc: ## Install protoc (Debian's protobuf-compiler, with the well-known .proto files) when missing.
	@if ! command -v protoc >/dev/null || [ ! -f /usr/include/google/protobuf/empty.proto ]; then \
		echo "Installing Debian's protobuf-compiler"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler >/dev/null; \
	fi

$(PROTOC_GEN_GO): $(LOCALBIN)/protoc-gen-go-$(PROTOC_GEN_GO_VERSION)
	ln -sf $(notdir $<) $@
$(LOCALBIN)/protoc-gen-go-$(PROTOC_GEN_GO_VERSION):
	$(call go-install-tool,$@,google.golang.org/protobuf/cmd/protoc-gen-go,$(PROTOC_GEN_GO_VERSION))

$(PROTOC_GEN_GO_GRPC): $(LOCALBIN)/protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION)
	ln -sf $(notdir $<) $@
$(LOCALBIN)/protoc-gen-go-grpc-$(PROTOC_GEN_GO_GRPC_VERSION):
	$(call go-install-tool,$@,google.golang.org/grpc/cmd/protoc-gen-go-grpc,$(PROTOC_GEN_GO_GRPC_VERSION))

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into ./bin.
$(CONTROLLER_GEN): $(LOCALBIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
	ln -sf $(notdir $<) $@

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint with the Kube API Linter plugin into ./bin (from source; takes a few minutes).
# Built from tools/golangci-lint, golangci-lint with the kubeapilinter module
# plugin compiled in (what "golangci-lint custom" makes, without its Git
# clone); rebuilt when that module's pins change. A temporary name first, so
# an interrupted build leaves no half-written binary.
$(GOLANGCI_LINT): tools/golangci-lint/go.mod tools/golangci-lint/go.sum tools/golangci-lint/main.go
	@mkdir -p $(LOCALBIN)
	cd tools/golangci-lint && $(GO) build -o $@.tmp .
	mv -f $@.tmp $@

.PHONY: helm
helm: $(HELM) ## Install helm into ./bin (built from source).
$(HELM): $(LOCALBIN)/helm-$(HELM_VERSION)
	ln -sf $(notdir $<) $@

$(LOCALBIN)/helm-$(HELM_VERSION):
	$(call go-install-tool,$@,helm.sh/helm/v3/cmd/helm,$(HELM_VERSION))

$(LOCALBIN)/controller-gen-$(CONTROLLER_GEN_VERSION):
	$(call go-install-tool,$@,sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_GEN_VERSION))

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
