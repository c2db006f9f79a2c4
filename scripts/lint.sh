#!/usr/bin/env bash
# The workflows and shell scripts, checked offline (make lint; make test runs
# it after go vet): actionlint over every GitHub Actions workflow in the
# repository, with shellcheck over their run: steps, and shellcheck over the
# repository's own scripts. A missing tool fails, never skips: make builds
# bin/actionlint (go install from the module proxy) and scripts/deps.sh
# installs shellcheck (Debian's package).
#
#   scripts/lint.sh [ACTIONLINT]    (default bin/actionlint)
set -euo pipefail
cd "$(dirname "$0")/.."
actionlint=${1:-bin/actionlint}
for tool in "$actionlint" shellcheck; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "lint.sh: $tool is missing (make bin/actionlint builds actionlint; scripts/deps.sh shellcheck installs shellcheck)" >&2
		exit 1
	fi
done
actionlint=$(realpath "$(command -v "$actionlint")")

# GitHub Actions workflows: the files with a top-level on: (a GitLab CI
# file has none), in .github/workflows, examples/ci and the workflow the
# act test runs.
workflows=()
for f in .github/workflows/*.y*ml examples/ci/*.y*ml internal/cli/testdata/act/*.y*ml; do
	[ -f "$f" ] && grep -q '^on:' "$f" && workflows+=("$f")
done
if [ ${#workflows[@]} -eq 0 ]; then
	echo "lint.sh: no GitHub Actions workflow found (examples/ci/*.yml): nothing would be checked" >&2
	exit 1
fi
echo "lint.sh: actionlint $("$actionlint" -version | head -1) on ${workflows[*]}"
"$actionlint" -shellcheck shellcheck "${workflows[@]}"

# The action (action.yml): actionlint reads an action's metadata only
# through a workflow that uses it, so a workflow in a scratch project uses
# it as a local action, in each mode, and actionlint checks the action's
# inputs and outputs against it (its run: steps call
# scripts/action.sh, which shellcheck reads below).
if [ -f action.yml ]; then
	scratch=$(mktemp -d)
	trap 'rm -rf "$scratch"' EXIT
	mkdir -p "$scratch/.github/workflows" "$scratch/fencecheck"
	cp action.yml "$scratch/fencecheck/action.yml"
	cat >"$scratch/.github/workflows/uses-the-action.yml" <<'YAML'
on: push
jobs:
  shard:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - id: fc
        uses: ./fencecheck
        with:
          mode: shard
          targets: etcd
          shard: 1/2
      - run: echo "${{ steps.fc.outputs.exit-code }} ${{ steps.fc.outputs.results }}"
  merge:
    needs: shard
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: ./fencecheck
        with:
          mode: merge
YAML
	echo "lint.sh: actionlint on action.yml, through a workflow that uses it"
	# actionlint finds a local action from the repository's root: a git
	# repository, else it checks nothing of the action.
	git -C "$scratch" init -q
	(cd "$scratch" && "$actionlint" -shellcheck shellcheck .github/workflows/uses-the-action.yml)
fi

# The repository's own scripts: every *.sh, and .ci/run.
mapfile -t scripts < <(find . \( -path ./.git -o -path ./bin -o -path ./results \) -prune -o -name '*.sh' -type f -print | sort)
scripts+=(.ci/run)
echo "lint.sh: shellcheck $(shellcheck --version | sed -n 's/^version: //p') on ${#scripts[@]} scripts"
shellcheck "${scripts[@]}"

# Tests that bound the machine's speed (a wall-clock comparison below the
# 5-minute hang limit): refused, but for the reviewed allow-list
# (scripts/wallclock/allow.txt). CONTRIBUTING.md, "How long the tests take".
echo "lint.sh: wall-clock bounds in tests (scripts/wallclock)"
"${GO:-go}" run ./scripts/wallclock
