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
# actionlint, for make lint and make test (scripts/lint.sh).
ACTIONLINT := bin/actionlint
# nektos/act, for make test-all: the GitHub Action run end to end
# (TestActionUnderAct), from the Go module proxy.
ACT := bin/act
export CGO_ENABLED := 0
# Every go command builds as the binaries are built (-trimpath: the worker
# binary, hence the worker image's tag, is the same from any checkout), so
# vet and the tests reuse the packages the build compiled instead of
# compiling them all again (a fresh machine's first build takes minutes).
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

.PHONY: all build deps deps-demo demo-build images demo test test-all unit lint fuzz bench findings zoo-belief clean schema

all: build

# The revision `fencecheck version` prints and test.json records. The go
# command stamps it (the vcs.* build settings) in a git clone, but not in a
# git worktree (.git is a file there) nor under GOFLAGS=-buildvcs=false (a
# go.env may set it), so git says it too, through -ldflags -X; the go
# command's own stamp wins where there is one (internal/base/buildinfo). The
# worker binary gets neither (-buildvcs=false): its image's tag hashes it,
# and should change with the worker's code, not with every commit.
VCS_X = -X $(BUILDINFO).revision=$(shell git rev-parse HEAD 2>/dev/null) \
	-X $(BUILDINFO).revisionTime=$(shell TZ=UTC git show -s --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD 2>/dev/null) \
	-X $(BUILDINFO).modified=$(shell [ -n "$$(git status --porcelain 2>/dev/null | head -1)" ] && echo true)
BUILDINFO := github.com/fencecheck/fencecheck/internal/base/buildinfo

build:
	$(GO) build -trimpath -ldflags='$(VCS_X)' -o $(BIN) ./cmd/fencecheck
	$(GO) build -trimpath -buildvcs=false -ldflags='-s -w' -o $(WORKER) ./cmd/fencecheck-worker

# System packages a fresh machine lacks (debootstrap for the base image), and
# a Docker Engine that answers (started when it is installed but not running).
deps:
	./scripts/deps.sh
	./scripts/docker-up.sh

images: build deps
	$(BIN) images build

# What the demo needs, and nothing more: an engine that answers. Its images
# (etcd and the worker) are FROM scratch, a static Go binary each: no
# debootstrap, no Debian base (its fault, pause-holder, is a signal from the
# host); Consul and ZooKeeper are not built.
deps-demo:
	./scripts/docker-up.sh

# The demo's binaries, in bin/demo/: built with -tags nokubernetes, they link
# no client-go (whose leader election brings every API group of Kubernetes:
# about half of what a fresh machine compiles for fencecheck), so the only
# targets they lack are the Kubernetes ones (fencecheck version says so, and
# naming one says why). make build builds the full bin/fencecheck.
DEMO_BIN := bin/demo/fencecheck
demo-build:
	$(GO) build -trimpath -tags nokubernetes -ldflags='$(VCS_X)' -o $(DEMO_BIN) ./cmd/fencecheck
	$(GO) build -trimpath -tags nokubernetes -buildvcs=false -ldflags='-s -w' -o bin/demo/fencecheck-worker ./cmd/fencecheck-worker

# The engine is seen to while Go compiles (make -j2: neither waits for the
# other); then the images (etcd's compile, the worker's image), then the
# stories.
demo:
	$(MAKE) --no-print-directory -j2 demo-build deps-demo
	$(DEMO_BIN) images build etcd worker
	$(DEMO_BIN) demo

# What every landing runs: vet, lint, unit tests, and the integration tests
# on real containers. A missing Docker Engine fails them; they never skip
# silently. The images most tests need are built first; ZooKeeper and
# TEST_CLIENTS' images build in the background
# while vet and the tests run (scripts/test.sh): a test that needs one first
# builds it or waits for it, and nothing is built twice. Two packages run
# at once (-p 2), and inside a package up to 4 tests (-parallel 4): each
# end-to-end run has its own cluster, and each test looks only at its own
# runs' containers. The one test that removes every fencecheck container
# (clean without --run) skips there, saying so, and runs alone at the end
# (FENCECHECK_CLEAN_ALL=1; a test that calls requireAlone joins its -run).
#
# make test fits CI's budget on a fresh machine (45 minutes quiet): what
# costs an image that would take most of it (Consul, the Kubernetes control
# plane, every other server version, the rest of the zoo's clients) or
# minutes of CPU on its own (three nights of trends, the 1M-operation
# report, a cluster for every fault) runs only in
# make test-all, which make test names at its end, listing what it
# skipped (internal/testkit/suite). Run make test-all before resolving
# work that touches those parts.
CLIENT_DIRS := $(shell ls -d examples/clients/*/ | sed 's|/$$||' | paste -sd, -)
# The example clients make test builds (internal/cli's makeTestClients).
TEST_CLIENTS := examples/clients/redis-py,examples/clients/go-etcd,examples/clients/sh-redis,examples/clients/go-redsync,examples/clients/go-rueidislock
test: build deps $(ACTIONLINT)
	GO=$(GO) ./scripts/test.sh $(BIN) $(TEST_CLIENTS)

# Everything make test runs, and the tests of the Kubernetes image, every
# server version and every client of the zoo (FENCECHECK_TEST_ALL=1), with
# all their images built in the background, and the CI files end to end:
# the GitHub Action under nektos/act, the GitLab template's stages.
test-all: build deps $(ACTIONLINT) $(ACT)
	FENCECHECK_TEST_ALL=1 GO=$(GO) ./scripts/test.sh $(BIN) $(CLIENT_DIRS)

# actionlint (with shellcheck) over the GitHub Actions workflows, and
# shellcheck over the repository's scripts (scripts/lint.sh; make test runs
# it after go vet). actionlint is built from the Go module proxy into bin/;
# shellcheck is Debian's (scripts/deps.sh).
$(ACTIONLINT):
	GOBIN=$(abspath bin) $(GO) install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
$(ACT):
	GOBIN=$(abspath bin) $(GO) install github.com/nektos/act@v0.2.89
lint: $(ACTIONLINT)
	./scripts/deps.sh shellcheck
	./scripts/lint.sh $(ACTIONLINT)

# Unit tests only (no Docker).
unit:
	$(GO) test -count=1 -short ./...

# The JSON Schemas of experiment files (docs/experiment.schema.json,
# docs/matrix.schema.json) made again from the knobs table (spec.Knobs);
# TestSchemaIsCurrent fails until they are.
schema:
	FENCECHECK_UPDATE_DOCS=1 $(GO) test -count=1 -run '^TestSchemaIsCurrent$$' ./internal/verdicts/experiment/

# Each fuzz target for FUZZTIME (a minute), one after another: the JSONL
# history reader, the EDN reader, Jepsen's two history parsers, the fencing
# proxy's request handling, client.json, test.json as rerun reads it, an
# experiment file (run -f, matrix -f; rerun reads test.json as one),
# --auth-file's content, --endpoints lists, merge's, trends' and zoo's
# inputs (a shard's and a night's matrix.json, a zoo's matrix.json and
# test.json), an image archive images load reads (its tar, its
# manifest.json and index.json), a run id (clean --run, test.json), and
# the output filter over text from elsewhere (safetext). Their seeds also
# run in every go test.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime $(FUZZTIME) ./internal/base/history/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeLine$$' -fuzztime $(FUZZTIME) ./internal/base/history/
	$(GO) test -run '^$$' -fuzz '^FuzzParseEDN$$' -fuzztime $(FUZZTIME) ./internal/verdicts/checkers/jepsen/
	$(GO) test -run '^$$' -fuzz '^FuzzParseKV$$' -fuzztime $(FUZZTIME) ./internal/verdicts/checkers/jepsen/
	$(GO) test -run '^$$' -fuzz '^FuzzParseRegisterLog$$' -fuzztime $(FUZZTIME) ./internal/verdicts/checkers/jepsen/
	$(GO) test -run '^$$' -fuzz '^FuzzProxyRequest$$' -fuzztime $(FUZZTIME) ./internal/systems/resources/proxy/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./internal/verdicts/experiment/
	$(GO) test -run '^$$' -fuzz '^FuzzLoadManifest$$' -fuzztime $(FUZZTIME) ./internal/systems/clientproto/
	$(GO) test -run '^$$' -fuzz '^FuzzRunArgs$$' -fuzztime $(FUZZTIME) ./internal/verdicts/rerun/
	$(GO) test -run '^$$' -fuzz '^FuzzParseAuthFile$$' -fuzztime $(FUZZTIME) ./internal/harness/
	$(GO) test -run '^$$' -fuzz '^FuzzCheckEndpoints$$' -fuzztime $(FUZZTIME) ./targets/
	$(GO) test -run '^$$' -fuzz '^FuzzMergeInput$$' -fuzztime $(FUZZTIME) ./internal/cli/
	$(GO) test -run '^$$' -fuzz '^FuzzTrendsNight$$' -fuzztime $(FUZZTIME) ./internal/cli/
	$(GO) test -run '^$$' -fuzz '^FuzzReadArchive$$' -fuzztime $(FUZZTIME) ./internal/base/images/
	$(GO) test -run '^$$' -fuzz '^FuzzArchiveManifest$$' -fuzztime $(FUZZTIME) ./internal/base/images/
	$(GO) test -run '^$$' -fuzz '^FuzzZooPage$$' -fuzztime $(FUZZTIME) ./internal/campaigns/zoo/
	$(GO) test -run '^$$' -fuzz '^FuzzText$$' -fuzztime $(FUZZTIME) ./internal/base/safetext/
	$(GO) test -run '^$$' -fuzz '^FuzzParseRunID$$' -fuzztime $(FUZZTIME) ./internal/base/runtime/

# The figures of docs/figures.md: cold and warm image builds (the cold build removes
# fencecheck's images and rebuilds them), 5 runs per fencing mode on etcd, the
# harness's overhead, and the checker and report benchmarks. The other
# targets' tables: go run ./bench -target T (see docs/figures.md).
bench: images
	$(GO) run ./bench -bin $(BIN) -runs 5 -cold
	$(GO) run ./bench -bin $(BIN) -overhead -runs 3 -time-limit 20s
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./internal/verdicts/checkers/ ./internal/report/

# The scenarios behind the findings in docs/, once each.
findings: images
	$(GO) run ./bench -bin $(BIN) -findings

# The zoo's belief table (docs/zoo.md; docs/belief.md says how it was made):
# every client of examples/clients with the careful holder (--recheck) and
# the write outside the cut (a PostgreSQL resource), under the five faults a
# lease meets, ZOO_RUNS seeds a cell; then the page from the matrices in
# docs/zoo and this one. The matrix exits 1 when a cell is invalid (a
# library said "held" too late): that is what it measures, so the page is
# made all the same.
ZOO_RUNS    ?= 1
ZOO_RESULTS ?= results/zoo-belief
ZOO_FAULTS  := pause-holder partition-client:both partition-client:requests netem:delay clock-skew:client
zoo-belief: images
	$(BIN) images build --client-dir $(CLIENT_DIRS)
	$(BIN) matrix --recheck --resource postgres --fencing none --strict --runs $(ZOO_RUNS) --time-limit 30s \
		--client-dir $(CLIENT_DIRS) $(addprefix --nemesis ,$(ZOO_FAULTS)) --results $(ZOO_RESULTS); \
		rc=$$?; [ $$rc -le 1 ] || exit $$rc
	$(BIN) zoo --out docs/zoo.md docs/zoo/* $(ZOO_RESULTS)

clean:
	-[ -x $(BIN) ] && $(BIN) clean
	rm -rf bin
