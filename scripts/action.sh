#!/usr/bin/env bash
# The steps of fencecheck's GitHub Action (action.yml at the repository's
# root), one subcommand each; action.yml passes its inputs as FC_*
# variables. It runs as the runner's user: only what needs root (the base
# image's debootstrap, and the matrix, whose faults stop and trace the
# containers' processes) runs under sudo, with the runner's own PATH and Go
# caches, and what root wrote is given back to the runner's user.
#
#   action.sh go-cache    the Go caches' directories (gocache=, gomodcache=)
#                         and their cache's key (key=, restore-key=): the Go
#                         version, go.sum and the action's Go source, hashed
#                         here (setup-go's own key hashes files of the
#                         workspace only, and the action's are not there)
#   action.sh install     build fencecheck from the action's source (FC_SOURCE)
#                         into FC_BIN
#   action.sh images-key  the kinds of images the shard's cells use (kinds=,
#                         matrix --images) and the image cache's key (key=:
#                         their tags, the worker's included; restore-key=: the
#                         same servers with any worker)
#   action.sh images      load the image cache (FC_IMAGE_CACHE), build what it
#                         lacks of FC_KINDS
#   action.sh save        write FC_KINDS' images to the cache directory (each
#                         archive once; others removed)
#   action.sh shard       run shard FC_SHARD of the matrix into FC_RESULTS (or,
#                         with FC_CELLS, only those cells: matrix --cell, in
#                         the job of shard 1; the others run nothing)
#   action.sh merge       merge the shards under FC_SHARDS into FC_RESULTS, keep
#                         it as a night of FC_NIGHTS (the last FC_KEEP_NIGHTS)
#                         and write the nights' trends; exit 1 on a regression
#                         or a cell that must be valid and is not. Results of
#                         chosen cells (matrix --cell) amend the newest night:
#                         it is merged with them and replaced by the result
#
# Outputs (exit-code=, results=, key=, artifact=, ...) go to GITHUB_OUTPUT
# when it is set, else to stdout. Inputs are checked first (check_inputs).
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
	for name in FC_ENDPOINTS FC_MATRIX_FILE FC_SHARD FC_RESULTS FC_ARTIFACT_PREFIX FC_SHARDS FC_NIGHTS FC_KEEP_NIGHTS FC_SOURCE FC_BIN FC_IMAGE_CACHE FC_AUTH_FILE FC_ATTEMPT FC_RUN_ID FC_NIGHTS_TAR; do
		v=${!name:-}
		if ! clean "$v"; then
			echo "action.sh: $name: a control character or line break in one value" >&2
			exit 254
		fi
	done
	for name in FC_FAULTS FC_ARGS FC_TARGETS FC_FENCING FC_CLIENT_DIRS FC_KINDS FC_CELLS; do
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
	# The attempt and run names go into artifacts' names and nights'
	# records: numbers only.
	for name in FC_ATTEMPT FC_RUN_ID; do
		v=${!name:-}
		if [ -n "$v" ] && ! [[ $v =~ ^[1-9][0-9]{0,19}$ ]]; then
			echo "action.sh: $name $v: want a number" >&2
			exit 254
		fi
	done
	# Cells are matrix --list's numbers.
	if [ -n "${FC_CELLS:-}" ] && ! [[ ${FC_CELLS//$'\n'/,} =~ ^[0-9][0-9,\ ]*$ ]]; then
		echo "action.sh: cells $FC_CELLS: want cell numbers as matrix --list prints them (3,5)" >&2
		exit 254
	fi
	# Image kinds are fencecheck's names (etcd, etcd@3.5.21, worker).
	if [ -n "${FC_KINDS:-}" ] && ! [[ $FC_KINDS =~ ^[a-z0-9@.\ _-]+$ ]]; then
		echo "action.sh: kinds $FC_KINDS: want image kinds (matrix --images)" >&2
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

# go_source_hash hashes the action's Go source (go.mod, go.sum, every .go
# file and the files the images embed), by path and content: the Go
# build cache's key changes exactly when what it compiles does.
go_source_hash() {
	(
		cd "$FC_SOURCE"
		find . \( -path ./.git -o -path ./bin -o -path ./results -o -name testdata \) -prune -o \
			-type f \( -name '*.go' -o -name go.mod -o -name go.sum -o -path './internal/base/images/*' \) -print0 |
			LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
	)
}

go-cache() {
	local gover sum
	gover=$(go env GOVERSION)
	sum=$(sha256sum <"$FC_SOURCE/go.sum" | cut -c1-16)
	out gocache "$(go env GOCACHE)"
	out gomodcache "$(go env GOMODCACHE)"
	out restore-key "fencecheck-go-$(uname -s)-$(uname -m)-$gover-$sum-"
	out key "fencecheck-go-$(uname -s)-$(uname -m)-$gover-$sum-$(go_source_hash)"
}

install() {
	mkdir -p "$FC_BIN"
	# The worker as make build makes it (no VCS stamp, stripped: its
	# image's tag hashes its code only); fencecheck with the revision
	# when the action's source is a git checkout (make build's -X
	# settings), for fencecheck version and the reports.
	local x=()
	if git -C "$FC_SOURCE" rev-parse HEAD >/dev/null 2>&1; then
		local bi=github.com/fencecheck/fencecheck/internal/base/buildinfo
		x=(-ldflags "-X $bi.revision=$(git -C "$FC_SOURCE" rev-parse HEAD) -X $bi.revisionTime=$(TZ=UTC git -C "$FC_SOURCE" show -s --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd HEAD)")
	fi
	(
		cd "$FC_SOURCE"
		CGO_ENABLED=0 go build -trimpath "${x[@]}" -o "$FC_BIN/fencecheck" ./cmd/fencecheck
		CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags='-s -w' -o "$FC_BIN/fencecheck-worker" ./cmd/fencecheck-worker
	)
	if [ -n "${GITHUB_PATH:-}" ]; then
		echo "$FC_BIN" >>"$GITHUB_PATH"
	fi
	"$FC_BIN/fencecheck" version
}

# hash16 is the first 16 hex digits of the SHA-256 of its input.
hash16() { sha256sum | cut -c1-16; }

images-key() {
	local args kinds servers=() k
	mapfile -d '' -t args < <(matrix_args)
	# The kinds of images the shard's cells use, and no others: the cache
	# holds exactly what this shard loads.
	kinds=$(fencecheck matrix "${args[@]}" --images)
	for k in $kinds; do
		[ "$k" != worker ] && servers+=("$k")
	done
	local stem
	stem="fencecheck-images-$(fencecheck images tags "${servers[@]}" | hash16)"
	out kinds "$(tr '\n' ' ' <<<"$kinds" | sed 's/ *$//')"
	# The images' tags are content hashes of everything in them (the
	# worker's of its binary): the cache is right exactly when its key
	# hits; a new worker restores the servers' images by restore-key and
	# builds the worker alone.
	out restore-key "$stem-"
	if grep -qx worker <<<"$kinds"; then
		out key "$stem-$(fencecheck images tags worker | hash16)"
	else
		out key "$stem-none"
	fi
}

images() {
	local kinds=()
	read -r -a kinds <<<"${FC_KINDS:-}"
	if compgen -G "$FC_IMAGE_CACHE/*.tar" >/dev/null; then
		fencecheck images load "$FC_IMAGE_CACHE"
	fi
	# The base (debootstrap) is the one image that needs root to build;
	# the others build as the runner's user, with its Go cache. Only the
	# kinds the cells use (images-key) are built.
	as_root fencecheck images build base
	fencecheck images build "${kinds[@]}"
	if [ -n "${FC_CLIENT_DIRS:-}" ]; then
		fencecheck images build --client-dir "$(list "$FC_CLIENT_DIRS" | paste -sd, -)"
	fi
}

save() {
	local kinds=()
	read -r -a kinds <<<"${FC_KINDS:-}"
	fencecheck images save "$FC_IMAGE_CACHE" "${kinds[@]}"
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
	if [ -n "${FC_AUTH_FILE:-}" ]; then
		printf '%s\0' --auth-file "$FC_AUTH_FILE"
	fi
	read -r -a extra <<<"$(tr '\n' ' ' <<<"${FC_ARGS:-}")"
	if [ ${#extra[@]} -gt 0 ]; then
		printf '%s\0' "${extra[@]}"
	fi
	# Chosen cells (a re-run of a night's failing cell) or a shard.
	if [ -n "${FC_CELLS:-}" ]; then
		printf '%s\0' --cell "$(list "$FC_CELLS" | paste -sd, -)"
	else
		printf '%s\0' --shard "${FC_SHARD:-1/1}"
	fi
	printf '%s\0' --results "$FC_RESULTS" --quiet
}

shard() {
	local args code=0
	# Chosen cells run in one job: shard 1 of a sharded workflow's jobs.
	local sh=${FC_SHARD:-1/1}
	if [ -n "${FC_CELLS:-}" ] && [ "${sh%%/*}" != 1 ]; then
		echo "fencecheck: cells $FC_CELLS run in the job of shard 1; this job (shard ${FC_SHARD}) runs nothing"
		out exit-code 0
		out results "$FC_RESULTS"
		out artifact "${FC_ARTIFACT_PREFIX:-fencecheck-shard-}cells-none-${FC_SHARD/\//-of-}-attempt-${FC_ATTEMPT:-1}"
		return
	fi
	mapfile -d '' -t args < <(matrix_args)
	sh=${sh/\//-of-}
	if [ -n "${FC_CELLS:-}" ]; then
		sh=cells-$(list "$FC_CELLS" | paste -sd- -)
	fi
	# One artifact per attempt: a re-run's results go beside the first
	# attempt's, and merge keeps each cell's newest run.
	out artifact "${FC_ARTIFACT_PREFIX:-fencecheck-shard-}$sh-attempt-${FC_ATTEMPT:-1}"
	as_root fencecheck matrix "${args[@]}" || code=$?
	give_back "$FC_RESULTS" "$(go env GOCACHE)" "$(go env GOMODCACHE)"
	# RESULTS/latest links to the newest run: an upload would follow it
	# and store that run twice.
	if [ -L "$FC_RESULTS/latest" ]; then
		rm -f -- "$FC_RESULTS/latest"
	fi
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
	local dir=$1 keep=$2 nights=() i
	mapfile -d '' -t nights < <(nightglob "$dir")
	for ((i = 0; i < ${#nights[@]} - keep; i++)); do
		rm -rf -- "${nights[i]}"
	done
}

# nightglob prints the nights of DIR (directories named as a night is, not
# links), oldest first, each ended by a NUL.
nightglob() {
	local n
	for n in "$1"/[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z; do
		if [ -d "$n" ] && [ ! -L "$n" ]; then
			printf '%s\0' "$n"
		fi
	done
}

# forget_attempts DIR RUN removes the nights that an earlier attempt of CI
# run RUN kept (their ci-run file names the run): a re-run's night takes
# their place, and is not compared with them as if they were the night
# before.
forget_attempts() {
	local dir=$1 run=$2 n nights=()
	[ -n "$run" ] || return 0
	mapfile -d '' -t nights < <(nightglob "$dir")
	for n in "${nights[@]}"; do
		if [ -f "$n/ci-run" ] && [ ! -L "$n/ci-run" ] && [ "$(head -c 64 "$n/ci-run" | cut -d' ' -f1)" = "$run" ]; then
			echo "fencecheck: night $(basename "$n") was an earlier attempt of run $run: the re-run's night replaces it"
			rm -rf -- "$n"
		fi
	done
}

merge() {
	local shards=() code=0 trends=0 d baseline=() night
	# shellcheck disable=SC2153 # FC_SHARDS is the merge step's input, FC_SHARD the shard step's
	for d in "$FC_SHARDS"/*/; do
		[ -f "$d/matrix.json" ] && shards+=("${d%/}")
	done
	if [ ${#shards[@]} -eq 0 ]; then
		echo "fencecheck merge: no shard's results under $FC_SHARDS" >&2
		exit 254
	fi
	mkdir -p "$FC_NIGHTS"
	# The nights' cache is one tar of them, holes kept (--sparse: a failing
	# cell's kept data is mostly preallocated zeros), unpacked here.
	if [ -n "${FC_NIGHTS_TAR:-}" ] && [ -f "$FC_NIGHTS_TAR" ] && [ ! -L "$FC_NIGHTS_TAR" ]; then
		tar -xf "$FC_NIGHTS_TAR" -C "$FC_NIGHTS" --no-same-owner
	fi
	# What the shards are decides (not an input): results of chosen cells
	# (matrix --cell; their matrix.json says "shard": "cells ...") amend
	# the newest night: it is merged with them (merge keeps each cell's
	# newest run), compared with the night before it, and replaced by the
	# result, which keeps its ci-run (the run it was the night of). A
	# re-run of a cells run amends the night its first attempt made.
	# Shards of a night forget an earlier attempt's night of their run.
	local chosen=0 whole=0 amending="${FC_NIGHTS%/}.amending" amended=""
	for d in "${shards[@]}"; do
		if head -c 65536 "$d/matrix.json" | grep -qE '"shard": *"cells [0-9]'; then
			chosen=1
		else
			whole=1
		fi
	done
	if [ "$chosen" = 1 ] && [ "$whole" = 1 ]; then
		echo "fencecheck merge: $FC_SHARDS holds both chosen cells (matrix --cell) and shards of a night: merge them apart" >&2
		exit 254
	fi
	if [ "$chosen" = 0 ]; then
		forget_attempts "$FC_NIGHTS" "${FC_RUN_ID:-}"
	else
		local nights=()
		mapfile -d '' -t nights < <(nightglob "$FC_NIGHTS")
		if [ ${#nights[@]} -eq 0 ]; then
			echo "fencecheck merge: chosen cells, and no night in the cache of nights to amend" >&2
			exit 254
		fi
		# Beside the nights (the same file system; not in their tar), and
		# put back if the merge makes no night.
		rm -rf -- "$amending"
		mkdir -p -- "$amending"
		mv -- "${nights[-1]}" "$amending/"
		amended="$amending/$(basename "${nights[-1]}")"
		shards+=("$amended")
		echo "fencecheck: chosen cells amend night $(basename "$amended")"
	fi
	if compgen -G "$FC_NIGHTS/*/matrix.json" >/dev/null; then
		baseline=(--baseline "$FC_NIGHTS")
	fi
	fencecheck merge --results "$FC_RESULTS" "${baseline[@]}" "${shards[@]}" || code=$?
	out exit-code "$code"
	out results "$FC_RESULTS"
	if [ -f "$FC_RESULTS/matrix.json" ]; then
		# The trends keep each night whole, so that every link of the
		# trends page resolves inside the nights' directory.
		night="$FC_NIGHTS/$(date -u +%Y%m%dT%H%M%SZ)"
		cp -r "$FC_RESULTS" "$night"
		if [ -n "$amended" ]; then
			if [ -f "$amended/ci-run" ] && [ ! -L "$amended/ci-run" ]; then
				head -c 64 "$amended/ci-run" >"$night/ci-run"
			fi
			rm -rf -- "$amending"
		elif [ -n "${FC_RUN_ID:-}" ]; then
			echo "$FC_RUN_ID ${FC_ATTEMPT:-1}" >"$night/ci-run"
		fi
		prune_nights "$FC_NIGHTS" "${FC_KEEP_NIGHTS:-30}"
		fencecheck trends "$FC_NIGHTS" || trends=$?
		if [ -n "${FC_NIGHTS_TAR:-}" ]; then
			mkdir -p "$(dirname "$FC_NIGHTS_TAR")"
			tar --sparse -cf "$FC_NIGHTS_TAR.new" -C "$FC_NIGHTS" .
			mv -f -- "$FC_NIGHTS_TAR.new" "$FC_NIGHTS_TAR"
		fi
	fi
	if [ -n "$amended" ] && [ -d "$amended" ]; then
		# No night was made: the amended one goes back as it was.
		mv -- "$amended" "$FC_NIGHTS/"
		rm -rf -- "$amending"
	fi
	if [ "$code" != 0 ] || [ "$trends" != 0 ]; then
		echo "fencecheck: merge exit $code, trends exit $trends" >&2
		exit 1
	fi
}

case "${1:-}" in
go-cache | install | images-key | images | save | shard | merge)
	check_inputs
	"$1"
	;;
*)
	echo "usage: action.sh go-cache|install|images-key|images|save|shard|merge" >&2
	exit 2
	;;
esac
