#!/usr/bin/env bash
# The steps of fencecheck's GitHub Action (action.yml at the repository's
# root), one subcommand each; action.yml passes its inputs as FC_*
# variables. It runs as the runner's user: only what needs root (the base
# image's debootstrap, and the matrix, whose faults stop and trace the
# containers' processes) runs under sudo, with the runner's own PATH and Go
# caches, and what root wrote is given back to the runner's user.
#
#   action.sh install   build fencecheck from the action's source (FC_SOURCE)
#                       into FC_BIN; print the image cache's key (key=...)
#   action.sh images    load the image cache (FC_IMAGE_CACHE), build what it lacks
#   action.sh save      write the images to the cache directory
#   action.sh shard     run shard FC_SHARD of the matrix into FC_RESULTS
#   action.sh merge     merge the shards under FC_SHARDS into FC_RESULTS, keep it
#                       as a night of FC_NIGHTS (the last FC_KEEP_NIGHTS) and
#                       write the nights' trends; exit 1 on a regression or a
#                       cell that must be valid and is not
#
# Outputs (exit-code=, results=, key=, artifact=) go to GITHUB_OUTPUT when
# it is set, else to stdout. Inputs are checked first (check_inputs).
set -euo pipefail

# out NAME VALUE writes one output. A value is one line of no control
# character (the inputs were checked so): a line break would add a line to
# GITHUB_OUTPUT, another output of the same name that overrides this one.
out() {
	if ! clean "$2" || ! [[ $1 =~ ^[a-z][a-z-]*$ ]]; then
		echo "action.sh: output $1: a control character or line break in its value" >&2
		exit 254
	fi
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
	else
		printf '%s=%s\n' "$1" "$2"
	fi
}

# clean succeeds when $1 holds no control character (a line break, a
# carriage return, an escape).
clean() {
	case $1 in
	*[[:cntrl:]]*) return 1 ;;
	esac
}

# check_inputs refuses (254, before anything runs) an input that would
# become more than it says: a control character or line break in a value
# that is one argument or one output (a line break in FC_RESULTS once
# added "exit-code=0" to GITHUB_OUTPUT, and in FC_ENDPOINTS arguments of
# its own), a shard that is not I/N, a number of nights that is not a
# number. The list inputs (FC_FAULTS, FC_ARGS, FC_TARGETS, FC_FENCING,
# FC_CLIENT_DIRS) may hold line breaks between their words, no other
# control character.
check_inputs() {
	local v name
	for name in FC_ENDPOINTS FC_MATRIX_FILE FC_SHARD FC_RESULTS FC_ARTIFACT_PREFIX FC_SHARDS FC_NIGHTS FC_KEEP_NIGHTS FC_SOURCE FC_BIN FC_IMAGE_CACHE; do
		v=${!name:-}
		if ! clean "$v"; then
			echo "action.sh: $name: a control character or line break in one value" >&2
			exit 254
		fi
	done
	for name in FC_FAULTS FC_ARGS FC_TARGETS FC_FENCING FC_CLIENT_DIRS; do
		v=${!name:-}
		if ! clean "${v//$'\n'/ }"; then
			echo "action.sh: $name: a control character (other than a line break between words)" >&2
			exit 254
		fi
	done
	if [ -n "${FC_SHARD:-}" ] && ! [[ $FC_SHARD =~ ^[1-9][0-9]{0,5}/[1-9][0-9]{0,5}$ ]]; then
		echo "action.sh: shard $FC_SHARD: want I/N (1/4)" >&2
		exit 254
	fi
	if [ -n "${FC_KEEP_NIGHTS:-}" ] && ! [[ $FC_KEEP_NIGHTS =~ ^[1-9][0-9]{0,5}$ ]]; then
		echo "action.sh: keep-nights $FC_KEEP_NIGHTS: want a number of nights, at least 1" >&2
		exit 254
	fi
}

# as_root runs a command as root (itself when already root), keeping the
# runner's PATH, home and Go caches and the job summary's file.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
		return
	fi
	sudo env "PATH=$PATH" "HOME=$HOME" "GOCACHE=$(go env GOCACHE)" "GOMODCACHE=$(go env GOMODCACHE)" \
		"GITHUB_STEP_SUMMARY=${GITHUB_STEP_SUMMARY:-}" "$@"
}

# give_back makes what root wrote under the paths the runner's user's again.
give_back() {
	if [ "$(id -u)" != 0 ]; then
		sudo chown -R "$(id -u):$(id -g)" "$@" 2>/dev/null || true
	fi
}

# list prints a list input (commas, spaces or new lines) one word a line.
list() {
	local s=${1//,/ }
	tr ' ' '\n' <<<"$s" | sed '/^$/d'
}

install() {
	mkdir -p "$FC_BIN"
	(
		cd "$FC_SOURCE"
		CGO_ENABLED=0 go build -trimpath -o "$FC_BIN/fencecheck" ./cmd/fencecheck
		CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$FC_BIN/fencecheck-worker" ./cmd/fencecheck-worker
	)
	if [ -n "${GITHUB_PATH:-}" ]; then
		echo "$FC_BIN" >>"$GITHUB_PATH"
	fi
	# The images' tags are content hashes of everything in them: the cache
	# is right exactly when its key hits.
	out key "fencecheck-images-$("$FC_BIN/fencecheck" images tags | sha256sum | cut -c1-32)"
}

images() {
	if compgen -G "$FC_IMAGE_CACHE/*.tar" >/dev/null; then
		fencecheck images load "$FC_IMAGE_CACHE"
	fi
	# The base (debootstrap) is the one image that needs root to build;
	# the others build as the runner's user, with its Go cache.
	as_root fencecheck images build base
	fencecheck images build
	if [ -n "${FC_CLIENT_DIRS:-}" ]; then
		fencecheck images build --client-dir "$(list "$FC_CLIENT_DIRS" | paste -sd, -)"
	fi
}

save() {
	fencecheck images save "$FC_IMAGE_CACHE"
}

# matrix_args prints the matrix's arguments, each ended by a NUL, from
# the inputs.
matrix_args() {
	if [ -n "${FC_MATRIX_FILE:-}" ]; then
		printf '%s\0' -f "$FC_MATRIX_FILE"
	fi
	if [ -n "${FC_TARGETS:-}" ]; then
		printf '%s\0' --target "$(list "$FC_TARGETS" | paste -sd, -)"
	fi
	if [ -n "${FC_FENCING:-}" ]; then
		printf '%s\0' --fencing "$(list "$FC_FENCING" | paste -sd, -)"
	fi
	# One cell's faults a line (or word): "pause-holder" and "kill,partition"
	# are two cells.
	local f faults extra
	read -r -a faults <<<"$(tr '\n' ' ' <<<"${FC_FAULTS:-}")"
	for f in "${faults[@]}"; do
		printf '%s\0' --nemesis "$f"
	done
	if [ -n "${FC_CLIENT_DIRS:-}" ]; then
		printf '%s\0' --client-dir "$(list "$FC_CLIENT_DIRS" | paste -sd, -)"
	fi
	if [ -n "${FC_ENDPOINTS:-}" ]; then
		printf '%s\0' --endpoints "$FC_ENDPOINTS"
	fi
	read -r -a extra <<<"$(tr '\n' ' ' <<<"${FC_ARGS:-}")"
	if [ ${#extra[@]} -gt 0 ]; then
		printf '%s\0' "${extra[@]}"
	fi
	printf '%s\0' --shard "${FC_SHARD:-1/1}" --results "$FC_RESULTS" --quiet
}

shard() {
	local args code=0
	mapfile -d '' -t args < <(matrix_args)
	local sh=${FC_SHARD:-1/1}
	out artifact "${FC_ARTIFACT_PREFIX:-fencecheck-shard-}${sh/\//-of-}"
	as_root fencecheck matrix "${args[@]}" || code=$?
	give_back "$FC_RESULTS" "$(go env GOCACHE)" "$(go env GOMODCACHE)"
	out exit-code "$code"
	out results "$FC_RESULTS"
	# A shard's verdicts are the merge's business; bad arguments (254) are
	# the workflow's, and fail here.
	if [ "$code" = 254 ]; then
		echo "fencecheck matrix: bad arguments (exit 254)" >&2
		exit 254
	fi
}

# prune_nights DIR KEEP removes all but the newest KEEP nights of DIR: only
# directories named as a night is (its UTC time, 20261206T053000Z), taken
# by a glob into an array, never split on spaces or line breaks (a night
# named "0 workspace-src" in a restored cache, or a DIR with a space in
# it, once removed the workspace's own directories). Anything else in DIR
# is left alone.
prune_nights() {
	local dir=$1 keep=$2 nights=() n i
	for n in "$dir"/[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z; do
		if [ -d "$n" ] && [ ! -L "$n" ]; then
			nights+=("$n")
		fi
	done
	for ((i = 0; i < ${#nights[@]} - keep; i++)); do
		rm -rf -- "${nights[i]}"
	done
}

merge() {
	local shards=() code=0 trends=0 d baseline=()
	# shellcheck disable=SC2153 # FC_SHARDS is the merge step's input, FC_SHARD the shard step's
	for d in "$FC_SHARDS"/*/; do
		[ -f "$d/matrix.json" ] && shards+=("${d%/}")
	done
	if [ ${#shards[@]} -eq 0 ]; then
		echo "fencecheck merge: no shard's results under $FC_SHARDS" >&2
		exit 254
	fi
	mkdir -p "$FC_NIGHTS"
	if compgen -G "$FC_NIGHTS/*/matrix.json" >/dev/null; then
		baseline=(--baseline "$FC_NIGHTS")
	fi
	fencecheck merge --results "$FC_RESULTS" "${baseline[@]}" "${shards[@]}" || code=$?
	out exit-code "$code"
	out results "$FC_RESULTS"
	if [ -f "$FC_RESULTS/matrix.json" ]; then
		# The trends keep each night whole, so that every link of the
		# trends page resolves inside the nights' directory.
		cp -r "$FC_RESULTS" "$FC_NIGHTS/$(date -u +%Y%m%dT%H%M%SZ)"
		prune_nights "$FC_NIGHTS" "${FC_KEEP_NIGHTS:-30}"
		fencecheck trends "$FC_NIGHTS" || trends=$?
	fi
	if [ "$code" != 0 ] || [ "$trends" != 0 ]; then
		echo "fencecheck: merge exit $code, trends exit $trends" >&2
		exit 1
	fi
}

case "${1:-}" in
install | images | save | shard | merge)
	check_inputs
	"$1"
	;;
*)
	echo "usage: action.sh install|images|save|shard|merge" >&2
	exit 2
	;;
esac
