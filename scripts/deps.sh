#!/usr/bin/env bash
# Installs the system packages fencecheck needs and a fresh Debian machine
# lacks: debootstrap (to build the base image), chromium (the report's
# integration test renders report.html in it, headless) and shellcheck
# (make test checks the workflows and scripts with it: scripts/lint.sh). Go
# and the Docker Engine are expected to be there already.
#
#   deps.sh              all three
#   deps.sh debootstrap  only what is named (make demo needs no browser)
set -euo pipefail

want=("$@")
[ ${#want[@]} -eq 0 ] && want=(debootstrap chromium shellcheck)
need=()
for p in "${want[@]}"; do
	command -v "$p" >/dev/null 2>&1 || need+=("$p")
done
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: please install as root: apt-get install -y ${need[*]}" >&2
	exit 1
fi
echo "deps.sh: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}" >/dev/null
