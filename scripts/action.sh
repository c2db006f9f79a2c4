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
# Outputs (exit-code=, results=, key=) go to GITHUB_OUTPUT when it is set,
# else to stdout.
set -euo pipefail

out() {
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		echo "$1" >>"$GITHUB_OUTPUT"
	else
		echo "$1"
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
	out "key=fencecheck-images-$("$FC_BIN/fencecheck" images tags | sha256sum | cut -c1-32)"
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

# matrix_args prints the matrix's arguments, one a line, from the inputs.
matrix_args() {
	if [ -n "${FC_MATRIX_FILE:-}" ]; then
		printf '%s\n' -f "$FC_MATRIX_FILE"
	fi
	if [ -n "${FC_TARGETS:-}" ]; then
		printf '%s\n' --target "$(list "$FC_TARGETS" | paste -sd, -)"
	fi
	if [ -n "${FC_FENCING:-}" ]; then
		printf '%s\n' --fencing "$(list "$FC_FENCING" | paste -sd, -)"
	fi
	# One cell's faults a line (or word): "pause-holder" and "kill,partition"
	# are two cells.
	local f faults extra
	read -r -a faults <<<"$(tr '\n' ' ' <<<"${FC_FAULTS:-}")"
	for f in "${faults[@]}"; do
		printf '%s\n' --nemesis "$f"
	done
	if [ -n "${FC_CLIENT_DIRS:-}" ]; then
		printf '%s\n' --client-dir "$(list "$FC_CLIENT_DIRS" | paste -sd, -)"
	fi
	if [ -n "${FC_ENDPOINTS:-}" ]; then
		printf '%s\n' --endpoints "$FC_ENDPOINTS"
	fi
	read -r -a extra <<<"$(tr '\n' ' ' <<<"${FC_ARGS:-}")"
	if [ ${#extra[@]} -gt 0 ]; then
		printf '%s\n' "${extra[@]}"
	fi
	printf '%s\n' --shard "${FC_SHARD:-1/1}" --results "$FC_RESULTS" --quiet
}

shard() {
	local args code=0
	mapfile -t args < <(matrix_args)
	as_root fencecheck matrix "${args[@]}" || code=$?
	give_back "$FC_RESULTS" "$(go env GOCACHE)" "$(go env GOMODCACHE)"
	out "exit-code=$code"
	out "results=$FC_RESULTS"
	# A shard's verdicts are the merge's business; bad arguments (254) are
	# the workflow's, and fail here.
	if [ "$code" = 254 ]; then
		echo "fencecheck matrix: bad arguments (exit 254)" >&2
		exit 254
	fi
}

merge() {
	local shards=() code=0 trends=0 d baseline=()
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
	out "exit-code=$code"
	out "results=$FC_RESULTS"
	if [ -f "$FC_RESULTS/matrix.json" ]; then
		# The trends keep each night whole, so that every link of the
		# trends page resolves inside the nights' directory.
		cp -r "$FC_RESULTS" "$FC_NIGHTS/$(date -u +%Y%m%dT%H%M%SZ)"
		find "$FC_NIGHTS" -mindepth 1 -maxdepth 1 -type d -print | sort | head -n -"${FC_KEEP_NIGHTS:-30}" | xargs -r rm -rf
		fencecheck trends "$FC_NIGHTS" || trends=$?
	fi
	if [ "$code" != 0 ] || [ "$trends" != 0 ]; then
		echo "fencecheck: merge exit $code, trends exit $trends" >&2
		exit 1
	fi
}

case "${1:-}" in
install | images | save | shard | merge) "$1" ;;
*)
	echo "usage: action.sh install|images|save|shard|merge" >&2
	exit 2
	;;
esac
