#!/usr/bin/env bash
# make test: every test, the integration tests on real containers included,
# on a machine that may have no image yet.
#
# The images most tests need (base, etcd, worker) are built first; the rest
# (consul, zookeeper, kubernetes, every server version, the example clients'
# images) build in the background while vet and the tests run: a fresh machine's compiles (kube-apiserver alone takes 13
# minutes of CPU) overlap the tests, which spend most of their time waiting
# for leases to expire. A test that needs an image the background has not
# made yet builds it itself or waits for it: each build holds a lock of its
# tag, so nothing is built twice (internal/images, lockRef). The tests assert
# what a fault does, never how fast the machine is (CONTRIBUTING.md), so the
# builds beside them change their time, not their verdicts.
#
#   scripts/test.sh BIN CLIENT_DIRS
set -euo pipefail
bin=${1:?usage: test.sh BIN CLIENT_DIRS}
clients=${2:?usage: test.sh BIN CLIENT_DIRS}
go=${GO:-go}
logdir=$(dirname "$bin")
stamp() { echo "test.sh: $(date -u +%H:%M:%S) $*"; }

stamp "images that most tests need: base, etcd, worker"
"$bin" images build base etcd worker

# Three lanes, each one build after another: kube-apiserver's compile, the
# longest, alone in one; the other Go compiles in another; the apt-get
# installs in the third (network and disk). Their logs go to files.
stamp "background builds: logs in $logdir/images-{compile,kubernetes,packages}.log"
# Each lane is a session of its own (setsid), so that stopping it stops the
# builds it started. Not niced: a test that needs an image waits for the
# lane building it, and a niced build beside busy processes barely runs
# (a fresh machine with two CPU hogs took 14 minutes to compile Consul so).
export BIN=$bin CLIENTS=$clients
# shellcheck disable=SC2016 # expanded by the lane's shell
setsid bash -c '"$BIN" images build consul && "$BIN" images build --all-versions' \
	>"$logdir/images-compile.log" 2>&1 &
compile=$!
setsid "$bin" images build kubernetes >"$logdir/images-kubernetes.log" 2>&1 &
kubernetes=$!
# shellcheck disable=SC2016
setsid bash -c '"$BIN" images build zookeeper && "$BIN" images build --client-dir "$CLIENTS"' \
	>"$logdir/images-packages.log" 2>&1 &
packages=$!
# A test run that fails or is interrupted takes its background builds with it.
trap 'kill -- -$compile -$kubernetes -$packages 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM

status=0
stamp "go vet"
"$go" vet ./... || status=$?
stamp "actionlint and shellcheck"
./scripts/lint.sh "$logdir/actionlint" || status=$?
if [ "$status" = 0 ]; then
	stamp "go test"
	"$go" build -o "$logdir/testlog" ./scripts/testlog
	# internal/cli, every command end to end and by far the longest
	# package, runs as two processes beside the others (two at a time):
	# every other one of its tests in one (-run), the rest in the other
	# (-skip, so a new test needs no list). Its tests look only at their own
	# runs' containers, as every package's do. Each stream's JSON events are
	# kept in $logdir/go-test-*.json; the console gets what a plain go test
	# prints, then the slowest tests of all three.
	cli=github.com/fencecheck/fencecheck/internal/cli
	stream() {
		local name=$1
		shift
		FENCECHECK_BIN=$PWD/$bin "$go" test -json -count=1 -timeout 75m "$@" 2>&1 |
			tee "$logdir/go-test-$name.json" | "$logdir/testlog" -slowest 0
	}
	mapfile -t others < <("$go" list ./... | grep -vx "$cli")
	stream others -p 2 -parallel 4 "${others[@]}" &
	s1=$!
	half=$("$go" test -list '^Test' ./internal/cli/ | grep '^Test' | awk 'NR % 2 == 1' | paste -sd'|' -) || true
	stream cli-a -parallel 3 -run "^($half)\$" ./internal/cli/ &
	s2=$!
	stream cli-b -parallel 3 -skip "^($half)\$" ./internal/cli/ &
	s3=$!
	for p in $s1 $s2 $s3; do
		wait "$p" || status=$?
	done
	cat "$logdir"/go-test-*.json | "$logdir/testlog" -quiet -slowest 30 || true
fi

if [ "$status" != 0 ]; then
	stamp "failed (exit $status); stopping the background builds"
	exit "$status" # the trap stops them
fi
# The builds must have succeeded too: every image is part of the suite.
for lane in compile kubernetes packages; do
	pid=${!lane}
	if wait "$pid"; then
		stamp "background $lane builds: done"
	else
		st=$?
		status=$st
		echo "test.sh: background $lane builds failed (exit $st); the end of $logdir/images-$lane.log:" >&2
		tail -n 40 "$logdir/images-$lane.log" >&2
	fi
done
trap - EXIT
grep -h 'compiled in\|: built in' "$logdir"/images-*.log || true
[ "$status" = 0 ] || exit "$status"

# The one test that removes every fencecheck container runs alone, last.
stamp "the clean-everything test"
FENCECHECK_BIN=$PWD/$bin FENCECHECK_CLEAN_ALL=1 "$go" test -count=1 -timeout 10m -run '^TestCleanAfterHarnessKilled$' ./internal/cli/
stamp "done"
