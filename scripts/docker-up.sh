#!/usr/bin/env bash
# Makes sure the Docker Engine answers before images are built or tests run.
#
# - It answers: nothing to do.
# - DOCKER_HOST is set (an engine elsewhere): only check; never start or stop
#   anything.
# - It is installed but not running (a CI machine whose session processes
#   have ended, a machine just booted): start it (systemctl where systemd
#   runs, else dockerd in the background, as this project's machines do) and
#   wait until it answers.
# - A dockerd runs but does not answer for DOCKER_UP_WAIT seconds: under CI
#   (CI=true) or with DOCKER_UP_RESTART=1, stop it and start it again (an
#   engine deadlocked in libnetwork was seen here); otherwise fail and say so.
#   Restarting stops every container on the machine, hence the opt-in.
# - No engine is installed, or it still does not answer: exit 1 with the tail
#   of its log. Integration tests never skip for want of an engine.
#
# - --restart: restart the engine even though `docker info` answers (the
#   watchdog of scripts/test.sh found its network calls hung: Docker 20.10's
#   network deadlock leaves `docker info` answering). Under CI (CI=true) or
#   with DOCKER_UP_RESTART=1 only, as above.
#
# DOCKER_UP_WAIT (default 60) is how long to wait at each step, and
# DOCKER_UP_PROBE (default 15) how long one `docker info` may take, in seconds.
set -euo pipefail

wait_s=${DOCKER_UP_WAIT:-60}
probe_s=${DOCKER_UP_PROBE:-15}
log=/var/log/dockerd.log

answers() { timeout "$probe_s" docker info >/dev/null 2>&1; }

# wait_answer N: true as soon as the engine answers, false after N seconds.
wait_answer() {
	local deadline=$(( $(date +%s) + $1 ))
	while [ "$(date +%s)" -lt "$deadline" ]; do
		answers && return 0
		sleep 1
	done
	answers
}

fail() {
	echo "docker-up: $*" >&2
	if [ -z "${DOCKER_HOST:-}" ] && [ -r "$log" ]; then
		echo "docker-up: the last lines of $log:" >&2
		tail -n 20 "$log" >&2
	fi
	exit 1
}

systemd() { [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }

# Without systemd the engine is started the way this project's machines start
# it: dockerd with no arguments. Debian's init script is not used: it raises
# the open-files limit to 1048576, above the hard limit here (20000), and
# stops there.
start_engine() {
	if systemd && systemctl start docker >&2; then
		return
	fi
	nohup setsid dockerd >>"$log" 2>&1 </dev/null &
	echo "docker-up: started dockerd (pid $!), log in $log" >&2
}

force=
if [ "${1:-}" = --restart ]; then
	force=1
elif [ $# -gt 0 ]; then
	fail "usage: docker-up.sh [--restart]"
fi

[ -z "$force" ] && answers && exit 0

if [ -n "${DOCKER_HOST:-}" ]; then
	fail "the Docker Engine at DOCKER_HOST=$DOCKER_HOST does not answer"
fi
command -v docker >/dev/null 2>&1 || fail "no docker client on PATH; install Docker Engine (Debian: apt-get install docker.io)"
command -v dockerd >/dev/null 2>&1 || fail "the Docker Engine (dockerd) is not installed; install it (Debian: apt-get install docker.io)"
if [ "$(id -u)" != 0 ]; then
	fail "the Docker Engine does not answer; start it as root (dockerd &) or check that this user may use /var/run/docker.sock"
fi

if pid=$(pgrep -x dockerd | head -n 1) && [ -n "$pid" ]; then
	if [ -z "$force" ]; then
		echo "docker-up: dockerd (pid $pid) runs but does not answer; waiting ${wait_s}s" >&2
		wait_answer "$wait_s" && exit 0
	fi
	if [ "${CI:-}" != true ] && [ "${DOCKER_UP_RESTART:-}" != 1 ]; then
		fail "dockerd (pid $pid) does not answer; restart it (this stops every container), or rerun with DOCKER_UP_RESTART=1 to let this script do it"
	fi
	why="still does not answer"
	[ -n "$force" ] && why="hangs (--restart)"
	echo "docker-up: dockerd (pid $pid) $why; restarting it" >&2
	if systemd; then
		systemctl restart docker >&2 || true
		wait_answer "$wait_s" || fail "the Docker Engine did not answer within ${wait_s}s of restarting it"
		exit 0
	fi
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
	if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
else
	echo "docker-up: the Docker Engine is not running; starting it" >&2
fi
start_engine
wait_answer "$wait_s" || fail "the Docker Engine did not answer within ${wait_s}s of starting it"
echo "docker-up: $(docker version --format 'engine {{.Server.Version}} (API {{.Server.APIVersion}})') answers" >&2
