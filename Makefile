# fencecheck: `make demo` and `make test` do all the set-up on a fresh machine
# (Debian with Go and Docker Engine installed): system packages, the engine
# started if it is not running, the binary, and the container images (built
# locally, no registry).

GO      ?= go
BIN     := bin/fencecheck
# The worker binary: what the worker image holds (cmd/fencecheck-worker, no
# Docker SDK, no report; stripped, as nobody debugs it in a container).
# fencecheck finds it beside itself.
WORKER  := bin/fencecheck-worker
export CGO_ENABLED := 0

.PHONY: all build deps deps-demo images demo test unit fuzz bench findings clean

all: build

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/fencecheck
	$(GO) build -trimpath -ldflags='-s -w' -o $(WORKER) ./cmd/fencecheck-worker

# System packages a fresh machine lacks (debootstrap for the base image), and
# a Docker Engine that answers (started when it is installed but not running).
deps:
	./scripts/deps.sh
	./scripts/docker-up.sh

images: build deps
	$(BIN) images build

# What the demo needs, and nothing more: debootstrap (no browser), and the
# base, etcd and worker images (etcd compiles while debootstrap makes the
# base; Consul and ZooKeeper are not built).
deps-demo:
	./scripts/deps.sh debootstrap
	./scripts/docker-up.sh

demo: build deps-demo
	$(BIN) images build etcd worker
	$(BIN) demo

# Everything: vet, unit tests, and the integration tests on real containers.
# A missing Docker Engine fails them; they never skip silently. Two packages
# run at once (-p 2), and inside a package up to 4 tests (-parallel 4): each
# end-to-end run has its own cluster, and each test looks only at its own
# runs' containers. The one test that removes every fencecheck container
# (clean without --run) skips there, saying so, and runs alone at the end
# (FENCECHECK_CLEAN_ALL=1; a test that calls requireAlone joins its -run).
# The kubernetes image, which a plain images build leaves out (its
# kube-apiserver compiles for 7 to 13 minutes the first time), is built
# before the tests, not during them beside the timing-sensitive ones; so are
# the other server versions the version tests run (etcd and Consul compile
# from source) and the example clients' images (apt-get, a JDK compiling
# Curator), one after another.
CLIENT_DIRS := $(shell ls -d examples/clients/*/ | sed 's|/$$||' | paste -sd, -)
test: images
	$(BIN) images build kubernetes
	$(BIN) images build --all-versions
	$(BIN) images build --client-dir $(CLIENT_DIRS)
	$(GO) vet ./...
	FENCECHECK_BIN=$(CURDIR)/$(BIN) $(GO) test -p 2 -parallel 4 -count=1 -timeout 60m ./...
	FENCECHECK_BIN=$(CURDIR)/$(BIN) FENCECHECK_CLEAN_ALL=1 $(GO) test -count=1 -timeout 10m -run '^TestCleanAfterHarnessKilled$$' ./internal/cli/

# Unit tests only (no Docker).
unit:
	$(GO) test -count=1 -short ./...

# Each fuzz target for FUZZTIME (a minute), one after another: the JSONL
# history reader, the EDN reader, Jepsen's two history parsers, the fencing
# proxy's request handling, client.json, test.json as rerun reads it, and
# merge's and trends' inputs (a shard's and a night's matrix.json). Their
# seeds also run in every go test.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) ./internal/history/
	$(GO) test -run '^$$' -fuzz '^FuzzParseEDN$$' -fuzztime $(FUZZTIME) ./internal/history/jepsen/
	$(GO) test -run '^$$' -fuzz '^FuzzParseKV$$' -fuzztime $(FUZZTIME) ./internal/history/jepsen/
	$(GO) test -run '^$$' -fuzz '^FuzzParseRegisterLog$$' -fuzztime $(FUZZTIME) ./internal/history/jepsen/
	$(GO) test -run '^$$' -fuzz '^FuzzProxyRequest$$' -fuzztime $(FUZZTIME) ./internal/resources/proxy/
	$(GO) test -run '^$$' -fuzz '^FuzzLoadManifest$$' -fuzztime $(FUZZTIME) ./internal/clientproto/
	$(GO) test -run '^$$' -fuzz '^FuzzRunArgs$$' -fuzztime $(FUZZTIME) ./internal/rerun/
	$(GO) test -run '^$$' -fuzz '^FuzzMergeInput$$' -fuzztime $(FUZZTIME) ./internal/cli/
	$(GO) test -run '^$$' -fuzz '^FuzzTrendsNight$$' -fuzztime $(FUZZTIME) ./internal/cli/

# The figures of docs/figures.md: cold and warm image builds (the cold build removes
# fencecheck's images and rebuilds them), 5 runs per fencing mode on etcd, the
# harness's overhead, and the checker and report benchmarks. The other
# targets' tables: go run ./bench -target T (see docs/figures.md).
bench: images
	$(GO) run ./bench -bin $(BIN) -runs 5 -cold
	$(GO) run ./bench -bin $(BIN) -overhead -runs 3 -time-limit 20s
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./internal/checkers/ ./internal/report/

# The scenarios behind the findings in docs/, once each.
findings: images
	$(GO) run ./bench -bin $(BIN) -findings

clean:
	-[ -x $(BIN) ] && $(BIN) clean
	rm -rf bin
