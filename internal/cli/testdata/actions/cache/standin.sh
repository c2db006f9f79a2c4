#!/usr/bin/env bash
# The cache stand-in's two steps (restore, save), for action.yml of
# restore/ and save/. The store is $FC_STANDIN_STORE/cache: a tar of the
# paths per key, named by the key, relative to the workspace. Log lines
# are the real action's.
set -euo pipefail
store=${FC_STANDIN_STORE:?the cache stand-in needs FC_STANDIN_STORE}/cache
mkdir -p "$store"
# The paths input: one a line, ~ for HOME, relative to the workspace.
mapfile -t paths < <(sed -e '/^[[:space:]]*$/d' -e "s|^~|$HOME|" <<<"$IN_PATH")
case $1 in
restore)
	found=
	if [ -f "$store/$IN_KEY.tar" ]; then
		found=$IN_KEY
	else
		while IFS= read -r prefix; do
			[ -n "$prefix" ] || continue
			# The newest entry whose key starts with the prefix.
			found=$(find "$store" -maxdepth 1 -type f -name "$prefix*.tar" -printf '%T@ %f\n' | sort -rn | head -1 | cut -d' ' -f2-)
			found=${found%.tar}
			[ -z "$found" ] || break
		done <<<"$IN_RESTORE_KEYS"
	fi
	if [ -z "$found" ]; then
		echo "Cache not found for input keys: $IN_KEY"
		echo "cache-hit=false" >>"$GITHUB_OUTPUT"
		exit 0
	fi
	tar -xPf "$store/$found.tar" -C "$GITHUB_WORKSPACE"
	echo "Cache restored from key: $found ($(stat -c %s "$store/$found.tar") bytes)"
	echo "cache-matched-key=$found" >>"$GITHUB_OUTPUT"
	if [ "$found" = "$IN_KEY" ]; then
		echo "cache-hit=true" >>"$GITHUB_OUTPUT"
	else
		echo "cache-hit=false" >>"$GITHUB_OUTPUT"
	fi
	;;
save)
	if [ -f "$store/$IN_KEY.tar" ]; then
		echo "::warning::Failed to save: Unable to reserve cache with key $IN_KEY, another job may be creating this cache."
		exit 0
	fi
	# Paths relative to the workspace, ../ kept (-P), as the real one
	# stores them: a path outside the workspace (the runner's temp, the Go
	# caches) is restored where it is relative to the next job's workspace.
	existing=()
	for p in "${paths[@]}"; do
		[ -e "$p" ] && existing+=("$(realpath -m --relative-to="$GITHUB_WORKSPACE" -- "$p")")
	done
	if [ ${#existing[@]} -eq 0 ]; then
		echo "::warning::Path Validation Error: Path(s) specified in the action for caching do(es) not exist, hence no cache is being saved."
		exit 0
	fi
	# A file that changes while it is read (another job's go command writing
	# its cache) is stored as it was read: GNU tar's exit 1.
	code=0
	tar -cPf "$store/$IN_KEY.tar.new" --warning=no-file-changed -C "$GITHUB_WORKSPACE" -- "${existing[@]}" || code=$?
	if [ "$code" -gt 1 ]; then
		echo "::error::cache stand-in: tar exit $code"
		exit 1
	fi
	mv -- "$store/$IN_KEY.tar.new" "$store/$IN_KEY.tar"
	echo "Cache saved with key: $IN_KEY ($(stat -c %s "$store/$IN_KEY.tar") bytes)"
	;;
esac
