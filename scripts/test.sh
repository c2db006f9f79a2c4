#!/usr/bin/env bash
# make test and make test-all: vet, lint, and the tests, the integration
# tests on real containers included, on a machine that may have no image yet.
#
# The images most tests need (base, etcd, worker) are built first; the rest
# build in the background while vet and the tests run: ZooKeeper and the
# client images of CLIENT_DIRS, and under make test-all
# (FENCECHECK_TEST_ALL=1) Consul, the Kubernetes image and every other
# server version too. A fresh machine's compiles overlap the tests, which
# spend most of their time waiting for leases to expire. A test that needs
# an image the background has not made yet builds it itself or waits for
# it: each build holds a lock of its tag, so nothing is built twice
# (internal/base/images, lockRef). The tests assert what a fault does, never how
# fast the machine is (CONTRIBUTING.md), so the builds beside them change
# their time, not their verdicts. Under make test, the tests of what only
# make test-all builds skip, and the end of the log lists them.
#
#   scripts/test.sh BIN CLIENT_DIRS
set -euo pipefail
bin=${1:?usage: test.sh BIN CLIENT_DIRS}
clients=${2:?usage: test.sh BIN CLIENT_DIRS}
go=${GO:-go}
logdir=$(dirname "$bin")
stamp() { echo "test.sh: $(date -u +%H:%M:%S) $*"; }

# Three lanes, each one build after another: the Go compiles in one
# (Consul and every other server version: make test-all only), kube-
# apiserver's alone in another (make test-all only: 20 minutes of CPU),
# the apt-get installs in the third (network and disk). Their logs go to
# files. They start first, beside the base, etcd and worker images and go
# vet; a lane waits on the base's build lock before it adds anything to it.
whole=${FENCECHECK_TEST_ALL:-}
stamp "background builds: logs in $logdir/images-{compile,kubernetes,packages}.log"
# Each lane is a session of its own (setsid), so that stopping it stops the
# builds it started. Not niced: a test that needs an image waits for the
# lane building it, and a niced build beside busy processes barely runs
# (a fresh machine with two CPU hogs took 14 minutes to compile Consul so).
export BIN=$bin CLIENTS=$clients
# The lanes' commands, expanded by each lane's shell.
if [ "$whole" = 1 ]; then
	# shellcheck disable=SC2016
	lane_compile='"$BIN" images build consul && "$BIN" images build --all-versions'
	# shellcheck disable=SC2016
	lane_kubernetes='"$BIN" images build kubernetes'
else
	# make test compiles no server beyond etcd's default (built first):
	# Consul's image (15 minutes of CPU), etcd's other versions and the
	# Kubernetes image are make test-all's.
	lane_compile='true'
	lane_kubernetes='true'
fi
# shellcheck disable=SC2016
lane_packages='"$BIN" images build zookeeper && "$BIN" images build --client-dir "$CLIENTS"'
setsid bash -c "$lane_compile" >"$logdir/images-compile.log" 2>&1 &
compile=$!
setsid bash -c "$lane_kubernetes" >"$logdir/images-kubernetes.log" 2>&1 &
kubernetes=$!
setsid bash -c "$lane_packages" >"$logdir/images-packages.log" 2>&1 &
packages=$!
# A test run that fails or is interrupted takes its background builds with it.
first=
trap 'kill -- -$compile -$kubernetes -$packages ${first:+-$first} 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM

status=0
flaky=()
restarted=0
# The images that most tests need, beside go vet and the linters: the base
# is debootstrap's network and disk, vet is CPU.
stamp "images that most tests need (base, etcd, worker), beside go vet and the linters"
setsid "$bin" images build base etcd worker >"$logdir/images-first.log" 2>&1 &
first=$!
stamp "go vet"
"$go" vet ./... || status=$?
stamp "actionlint and shellcheck"
./scripts/lint.sh "$logdir/actionlint" || status=$?
if wait "$first"; then
	grep -h 'compiled in\|: built in' "$logdir/images-first.log" || true
	stamp "images base, etcd, worker: done"
else
	st=$?
	echo "test.sh: images build base etcd worker failed (exit $st):" >&2
	tail -n 40 "$logdir/images-first.log" >&2
	status=$st
fi
if [ "$status" = 0 ]; then
	stamp "go test"
	"$go" build -o "$logdir/testlog" ./scripts/testlog
	"$go" build -o "$logdir/enginewatch" ./scripts/enginewatch
	# The tests run as five streams (go test processes) at once, each with
	# its JSON events kept in $logdir/go-test-STREAM-ROUND.json; the console
	# gets what a plain go test prints, then the slowest tests of all
	# streams. Every test looks only at its own runs' containers.
	#   others: every package but internal/cli and those of "waiting", two
	#     at a time;
	#   waiting: the packages whose tests need an image a background lane
	#     builds (Consul, ZooKeeper, Kubernetes): they wait for it in a
	#     stream of their own, two at a time, instead of holding one of the
	#     others' slots;
	#   cli-w: internal/cli's tests of those images, by name (Consul,
	#     ZooKeeper, Kubernetes, Curator), for the same reason, two at a
	#     time;
	#   cli-a, cli-b: the rest of internal/cli, every command end to end
	#     and by far the longest package, every other test in cli-a (-run)
	#     and all else in cli-b (-skip, so a new test needs no list).
	cli=github.com/fencecheck/fencecheck/internal/cli
	stream() {
		local name=$1
		shift
		FENCECHECK_BIN=$PWD/$bin "$go" test -json -count=1 -timeout 75m "$@" 2>&1 |
			tee "$logdir/go-test-$name.json" | "$logdir/testlog" -slowest 0
	}
	# killtree PID: stops a process and everything it started.
	killtree() {
		local c
		for c in $(pgrep -P "$1" || true); do killtree "$c"; done
		kill -TERM "$1" 2>/dev/null || true
	}
	rm -f "$logdir"/go-test-*.json
	images_re='consul|zookeeper|kubernetes'
	mapfile -t waiting < <("$go" list ./internal/systems/lockservices/... | grep -E "/internal/systems/lockservices/($images_re)\$")
	mapfile -t others < <("$go" list ./... | grep -vx "$cli" | grep -vxF -f <(printf '%s\n' "${waiting[@]}" ""))
	mapfile -t clitests < <("$go" test -list '^Test' ./internal/cli/ | grep '^Test')
	cliw_re='Consul|ZooKeeper|Kubernetes|Curator'
	cliw=$(printf '%s\n' "${clitests[@]}" | grep -E "$cliw_re" | paste -sd'|' -) || true
	half=$(printf '%s\n' "${clitests[@]}" | grep -vE "$cliw_re" | awk 'NR % 2 == 1' | paste -sd'|' -) || true
	declare -A todo=([cli-w]=1 [cli-a]=1 [cli-b]=1)
	# Under CI the Engine is watched while the tests run (scripts/enginewatch:
	# a network call unanswered for 60 s). On a hang the streams are stopped,
	# the Engine CI started is restarted, and the packages that had not
	# finished run again, at most twice; what finished keeps its result.
	for round in 1 2 3; do
		pids=()
		if [ ${#others[@]} -gt 0 ]; then
			stream "others-$round" -p 2 -parallel 4 "${others[@]}" &
			pids+=($!)
		fi
		if [ ${#waiting[@]} -gt 0 ]; then
			stream "waiting-$round" -p 2 -parallel 2 "${waiting[@]}" &
			pids+=($!)
		fi
		if [ "${todo[cli-w]}" = 1 ] && [ -n "$cliw" ]; then
			stream "cli-w-$round" -parallel 2 -run "^($cliw)\$" ./internal/cli/ &
			pids+=($!)
		fi
		if [ "${todo[cli-a]}" = 1 ]; then
			stream "cli-a-$round" -parallel 3 -run "^($half)\$" ./internal/cli/ &
			pids+=($!)
		fi
		if [ "${todo[cli-b]}" = 1 ]; then
			stream "cli-b-$round" -parallel 3 -skip "^($half|$cliw)\$" ./internal/cli/ &
			pids+=($!)
		fi
		watch=
		if [ "${CI:-}" = true ] && [ "$round" -lt 3 ]; then
			"$logdir/enginewatch" -timeout "${ENGINE_HANG:-60s}" &
			watch=$!
		fi
		hung=0
		while :; do
			alive=0
			for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
			[ "$alive" = 1 ] || break
			if [ -n "$watch" ] && ! kill -0 "$watch" 2>/dev/null; then
				wait "$watch" && st=0 || st=$?
				watch=
				[ "$st" = 3 ] && hung=1 && break
			fi
			sleep 2
		done
		if [ -n "$watch" ]; then
			kill "$watch" 2>/dev/null || true
			wait "$watch" 2>/dev/null || true
		fi
		if [ "$hung" = 0 ]; then
			for p in "${pids[@]}"; do
				wait "$p" || status=$?
			done
			break
		fi
		stamp "THE DOCKER ENGINE HUNG: stopping the tests in flight, restarting the Engine, running again what had not finished"
		for p in "${pids[@]}"; do killtree "$p"; done
		for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
		./scripts/docker-up.sh --restart
		restarted=1
		"$bin" clean || true
		# What finished keeps its result: run again only the rest.
		mapfile -t finished < <(cat "$logdir"/go-test-*.json | "$logdir/testlog" -finished)
		mapfile -t others < <(printf '%s\n' "${others[@]}" | grep -vxF -f <(printf '%s\n' "${finished[@]}" "") || true)
		mapfile -t waiting < <(printf '%s\n' "${waiting[@]}" | grep -vxF -f <(printf '%s\n' "${finished[@]}" "") || true)
		for c in cli-w cli-a cli-b; do
			if "$logdir/testlog" -finished <"$logdir/go-test-$c-$round.json" 2>/dev/null | grep -qxF "$cli"; then
				todo[$c]=0
			fi
		done
		stamp "round $((round + 1)): ${#others[@]}+${#waiting[@]} packages, internal/cli streams to run again: w=${todo[cli-w]} a=${todo[cli-a]} b=${todo[cli-b]}"
	done
	cat "$logdir"/go-test-*.json | "$logdir/testlog" -quiet -slowest 30 || true

	# A failure is confirmed before it fails CI: each test that failed runs
	# once more, alone. One that passes then is listed as FLAKY (a bug to
	# fix: its first error is kept) and CI stays green; one that fails
	# again fails CI, and so does a package that failed outside its tests
	# (a build error, a timeout) or more than $max_retry failed tests.
	if [ "$status" != 0 ]; then
		max_retry=${RETRY_MAX:-8}
		mapfile -t failed < <(cat "$logdir"/go-test-*.json | "$logdir/testlog" -failed)
		if [ ${#failed[@]} -gt 0 ] && [ ${#failed[@]} -le "$max_retry" ] && ! printf '%s\n' "${failed[@]}" | grep -q ' -$'; then
			stamp "${#failed[@]} failed tests: each runs once more, alone"
			status=0
			flaky=()
			for f in "${failed[@]}"; do
				pkg=${f% *} test=${f#* }
				if FENCECHECK_BIN=$PWD/$bin "$go" test -json -count=1 -timeout 30m -run "^${test}\$" "$pkg" 2>&1 |
					tee "$logdir/retry-${test}.json" | "$logdir/testlog" -slowest 0; then
					flaky+=("$pkg $test")
				else
					status=1
				fi
			done
		fi
	fi
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
	elif [ "$restarted" = 1 ] && cmd=lane_$lane && bash -c "${!cmd}" >>"$logdir/images-$lane.log" 2>&1; then
		# The Engine's restart stopped the lane's builds: built again.
		stamp "background $lane builds: done, again after the Engine's restart"
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
if [ ${#flaky[@]} -gt 0 ]; then
	echo "test.sh: FLAKY (failed in the full run, passed alone; a flaky test is a bug to fix):"
	for f in "${flaky[@]}"; do
		echo "  FLAKY $f"
		cat "$logdir"/go-test-*.json | "$logdir/testlog" -reasons "$f" | sed 's/^/        /'
	done
fi
if [ "$whole" != 1 ]; then
	mapfile -t rest < <(cat "$logdir"/go-test-*.json | "$logdir/testlog" -skipped 'make test-all:')
	echo "test.sh: ${#rest[@]} tests ran only in make test-all (the Consul and Kubernetes images, every other server version, the rest of the zoo's clients, the faults beyond one per mechanism, three nights of trends, the 1M-operation report in a browser); run it before resolving work on those parts:"
	[ ${#rest[@]} = 0 ] || printf '  %s\n' "${rest[@]}"
	echo "test.sh: make test-all runs them (FENCECHECK_TEST_ALL=1)"
fi
stamp "done"
