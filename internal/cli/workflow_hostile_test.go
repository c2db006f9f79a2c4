package cli

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// shardEnv is what the action's shard step gives action.sh, plus more.
func shardEnv(more map[string]string) map[string]string {
	env := map[string]string{"FC_TARGETS": "etcd", "FC_FAULTS": "kill", "FC_FENCING": "token", "FC_SHARD": "1/1",
		"FC_RESULTS": "res", "FC_ARTIFACT_PREFIX": "fencecheck-shard-"}
	maps.Copy(env, more)
	return env
}

// The action's inputs are checked before anything runs (issue 48, item
// 12): a line break or control character in a value that is one argument
// or one output is refused with 254 (a line break in results once added
// "exit-code=0" to GITHUB_OUTPUT, one in endpoints arguments of their
// own), as are a shard that is not I/N and a number of nights that is not
// a number; a line break between the words of a list input (faults) still
// separates them; GITHUB_OUTPUT gets one line per output.
func TestActionRefusesHostileInputs(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script, _ := filepath.Abs(repoFile("scripts", "action.sh"))
	sb := newSandbox(t)
	output := filepath.Join(sb.dir, "output")
	for _, c := range []struct {
		what string
		env  map[string]string
	}{
		{"shard", shardEnv(map[string]string{"FC_RESULTS": "res\nexit-code=0"})},
		{"shard", shardEnv(map[string]string{"FC_ENDPOINTS": "http://10.0.0.1:2379\n--results\n/tmp/elsewhere"})},
		{"shard", shardEnv(map[string]string{"FC_MATRIX_FILE": "m.yml\n--client-dir\n/tmp"})},
		{"shard", shardEnv(map[string]string{"FC_SHARD": "1/1\n--time-limit\n1h"})},
		{"shard", shardEnv(map[string]string{"FC_SHARD": "1/1 --x"})},
		{"shard", shardEnv(map[string]string{"FC_ARTIFACT_PREFIX": "a\nexit-code=0\n"})},
		{"shard", shardEnv(map[string]string{"FC_ARGS": "--runs 3 \x1b]0;owned\a"})},
		{"shard", shardEnv(map[string]string{"FC_TARGETS": "etcd\r"})},
		{"merge", map[string]string{"FC_SHARDS": "shards", "FC_RESULTS": "res", "FC_NIGHTS": "nights", "FC_KEEP_NIGHTS": "1; rm -rf x"}},
		{"merge", map[string]string{"FC_SHARDS": "shards", "FC_RESULTS": "res", "FC_NIGHTS": "nights", "FC_KEEP_NIGHTS": "victim nights"}},
		{"merge", map[string]string{"FC_SHARDS": "shards", "FC_RESULTS": "res", "FC_NIGHTS": "nights\n", "FC_KEEP_NIGHTS": "3"}},
	} {
		os.MkdirAll(filepath.Join(sb.dir, "shards", "s1"), 0o755)
		os.WriteFile(filepath.Join(sb.dir, "shards", "s1", "matrix.json"), []byte("{}"), 0o644)
		os.Remove(output)
		calls, out, err := sb.runErr(script+" "+c.what, c.env)
		code := -1
		if e, ok := err.(*exec.ExitError); ok {
			code = e.ExitCode()
		}
		if code != 254 || len(calls) != 0 {
			t.Errorf("%s %q: exit %d (%v), calls %q, want 254 and no call\n%s", c.what, c.env, code, err, calls, out)
		}
		if b, _ := os.ReadFile(output); len(b) > 0 {
			t.Errorf("%s %q: GITHUB_OUTPUT written: %q", c.what, c.env, b)
		}
	}

	// Faults a line each are still one cell each; the outputs one line
	// each.
	calls := sb.run(t, script+" shard", shardEnv(map[string]string{"FC_FAULTS": "kill\npause-holder\n", "FC_ARGS": "--runs\n3"}))
	args, _ := matrixCall(t, calls)
	if !slices.Equal(args, []string{"--target", "etcd", "--fencing", "token", "--nemesis", "kill", "--nemesis", "pause-holder", "--runs", "3", "--shard", "1/1"}) {
		t.Errorf("matrix %q", args)
	}
	b, _ := os.ReadFile(output)
	if got := strings.Split(strings.TrimSpace(string(b)), "\n"); !slices.Equal(got, []string{"artifact=fencecheck-shard-1-of-1-attempt-1", "exit-code=0", "results=res"}) {
		t.Errorf("GITHUB_OUTPUT %q", got)
	}
}

// The merge keeps the newest nights and removes only older directories
// named as a night is (issue 48, item 5): a nights directory with a space
// in its name, and a night named "0 workspace-src" in a restored cache,
// once made `find | xargs rm -rf` remove the workspace's ./victim and
// ./workspace-src.
func TestActionPrunesOnlyNights(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script, _ := filepath.Abs(repoFile("scripts", "action.sh"))
	sb := newSandbox(t)
	mk := func(p ...string) {
		if err := os.MkdirAll(filepath.Join(append([]string{sb.dir}, p...)...), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("victim", "keep")
	mk("workspace-src", "keep")
	mk("nights", "keep")
	mk("victim nights", "0 workspace-src")
	mk("victim nights", "20200101T000000Z")
	mk("victim nights", "20200102T000000Z")
	mk("shards", "s1")
	os.WriteFile(filepath.Join(sb.dir, "shards", "s1", "matrix.json"), []byte("{}"), 0o644)
	sb.run(t, script+" merge", map[string]string{"FC_SHARDS": "shards", "FC_RESULTS": "res", "FC_NIGHTS": "victim nights", "FC_KEEP_NIGHTS": "1"})
	checkPruned(t, sb.dir, "victim nights", "victim/keep", "nights/keep")
}

// checkPruned checks that the workspace's own directories (keep), a
// directory of nights not named as a night and the newest night are
// there, and no older night.
func checkPruned(t *testing.T, dir, nights string, keep ...string) {
	t.Helper()
	for _, p := range append(keep, "workspace-src/keep", nights+"/0 workspace-src") {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("removed: %v", err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, nights, "2*Z"))
	if len(left) != 1 || strings.HasPrefix(filepath.Base(left[0]), "2020") {
		t.Errorf("nights left: %q, want the new one only", left)
	}
}

// The GitLab template's list variables are split into words, never
// glob-expanded (issue 48, item 12: an unquoted "*" in FENCECHECK_FAULTS
// or FENCECHECK_ARGS became the job's file names), and its merge prunes
// only nights (item 5).
func TestGitLabTemplateHostileVariables(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	tmpl := readYAML(t, repoFile("templates", "gitlab", "fencecheck.gitlab-ci.yml"))
	vars := map[string]string{}
	for k, v := range mapOf(tmpl["variables"]) {
		vars[k] = str(v)
	}
	sb := newSandbox(t)
	os.WriteFile(filepath.Join(sb.dir, "secret-file"), nil, 0o644)
	env := maps.Clone(vars)
	maps.Copy(env, map[string]string{"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "1", "FENCECHECK_FAULTS": "*", "FENCECHECK_ARGS": "--runs 3 *", "FENCECHECK_ZOO_ARGS": "--target etcd *"})
	for _, job := range []string{"fencecheck-shard", "fencecheck-zoo"} {
		args, _ := matrixCall(t, sb.run(t, strings.Join(flatten(gitlabJob(tmpl, job)["script"]), "\n"), env))
		if slices.Contains(args, "secret-file") || !slices.Contains(args, "*") {
			t.Errorf("%s: matrix %q: a \"*\" in a variable was glob-expanded", job, args)
		}
	}

	mk := func(p ...string) {
		if err := os.MkdirAll(filepath.Join(append([]string{sb.dir}, p...)...), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk("workspace-src", "keep")
	mk("nights", "0 workspace-src")
	mk("nights", "20200101T000000Z")
	mk("shard-1")
	var nights []string
	for i := range 31 {
		nights = append(nights, filepath.Join(sb.dir, "nights", "20200101T0000"+string(rune('0'+i/10))+string(rune('0'+i%10))+"Z"))
	}
	for _, n := range nights {
		mk("nights", filepath.Base(n))
	}
	sb.run(t, strings.Join(flatten(gitlabJob(tmpl, "fencecheck-merge")["script"]), "\n"), vars)
	for _, p := range []string{"workspace-src/keep", "nights/0 workspace-src"} {
		if _, err := os.Stat(filepath.Join(sb.dir, p)); err != nil {
			t.Errorf("removed: %v", err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(sb.dir, "nights", "2*Z"))
	if len(left) != 30 || slices.Contains(left, nights[0]) || slices.Contains(left, nights[1]) {
		t.Errorf("%d nights left, want the newest 30", len(left))
	}
}

// The action's cells input: the shard step of shard 1 runs matrix --cell
// (not --shard) and names its artifact by the cells, other shards' steps
// run nothing; the merge step, seeing chosen cells in the shards'
// matrix.json (not an input), amends the newest night: merged with the
// cells' results against the nights before it, replaced by the result,
// which keeps the amended night's ci-run (a re-run of the cells' run
// amends that night again). A merge that makes no night puts the night
// back; chosen cells mixed with a night's shards, or with no night to
// amend, are refused (254); cells that are not numbers are refused before
// anything runs.
func TestActionCellsAmendTheNewestNight(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script, _ := filepath.Abs(repoFile("scripts", "action.sh"))
	sb := newSandbox(t)
	calls := sb.run(t, script+" shard", shardEnv(map[string]string{"FC_CELLS": "3, 5", "FC_SHARD": "1/4", "FC_ATTEMPT": "2"}))
	args, _ := matrixCall(t, calls)
	if i := slices.Index(args, "--cell"); i < 0 || args[i+1] != "3,5" || slices.Contains(args, "--shard") {
		t.Errorf("matrix %q: want --cell 3,5 and no --shard", args)
	}
	out, _ := os.ReadFile(filepath.Join(sb.dir, "output"))
	if !strings.Contains(string(out), "artifact=fencecheck-shard-cells-3-5-attempt-2\n") {
		t.Errorf("outputs:\n%s", out)
	}
	if calls := sb.run(t, script+" shard", shardEnv(map[string]string{"FC_CELLS": "3", "FC_SHARD": "2/4"})); len(calls) != 0 {
		t.Errorf("shard 2/4 with cells ran %q, want nothing", calls)
	}
	write := func(p, body string) {
		os.MkdirAll(filepath.Join(sb.dir, p), 0o755)
		os.WriteFile(filepath.Join(sb.dir, p, "matrix.json"), []byte(body), 0o644)
	}
	write("nights/20261201T021700Z", "{}")
	write("nights/20261202T021700Z", "{}")
	os.WriteFile(filepath.Join(sb.dir, "nights/20261202T021700Z/ci-run"), []byte("41 1\n"), 0o644)
	write("shards/cells", `{"total_cells": 4, "shard": "cells 3", "cells": []}`)
	env := map[string]string{"FC_SHARDS": "shards", "FC_RESULTS": "res", "FC_NIGHTS": "nights", "FC_RUN_ID": "42", "FC_ATTEMPT": "1"}
	mergeCall := func(calls [][]string) []string {
		for _, c := range calls {
			if len(c) > 0 && c[0] == "merge" {
				return c
			}
		}
		return nil
	}
	// merge --results res --baseline nights shards/cells AMENDED
	merge := mergeCall(sb.run(t, script+" merge", env))
	if len(merge) != 7 || merge[3] != "--baseline" || merge[4] != "nights" || merge[5] != "shards/cells" || merge[6] != "nights.amending/20261202T021700Z" {
		t.Errorf("merge %q: want the cells and the newest night, against the nights before it", merge)
	}
	left, _ := filepath.Glob(filepath.Join(sb.dir, "nights", "2*Z"))
	if len(left) != 2 || filepath.Base(left[0]) != "20261201T021700Z" || strings.HasPrefix(filepath.Base(left[1]), "20261202") {
		t.Fatalf("nights after the amendment: %q, want night 1 and the amended night (a new one)", left)
	}
	if b, _ := os.ReadFile(filepath.Join(left[1], "ci-run")); string(b) != "41 1\n" {
		t.Errorf("the amended night's ci-run %q, want the night's run (41 1)", b)
	}
	if _, err := os.Stat(filepath.Join(sb.dir, "nights.amending")); !os.IsNotExist(err) {
		t.Errorf("nights.amending left behind: %v", err)
	}
	// Attempt 2 of the cells' run amends the amended night again.
	amended := left[1]
	os.RemoveAll(filepath.Join(sb.dir, "res"))
	env["FC_ATTEMPT"] = "2"
	if merge := mergeCall(sb.run(t, script+" merge", env)); len(merge) != 7 || merge[6] != filepath.Join("nights.amending", filepath.Base(amended)) {
		t.Errorf("attempt 2 merged %q, want the night attempt 1 made (%s)", merge, filepath.Base(amended))
	}
	// A merge that makes no night puts the amended night back.
	os.RemoveAll(filepath.Join(sb.dir, "res"))
	before, _ := filepath.Glob(filepath.Join(sb.dir, "nights", "2*Z"))
	if _, out, err := sb.runErr(script+" merge", map[string]string{"FC_SHARDS": "shards", "FC_RESULTS": "res", "FC_NIGHTS": "nights", "FC_STUB_MERGE_FAIL": "1"}); err == nil {
		t.Errorf("a failing merge passed:\n%s", out)
	}
	if after, _ := filepath.Glob(filepath.Join(sb.dir, "nights", "2*Z")); !slices.Equal(after, before) {
		t.Errorf("after a failing merge the nights are %q, want %q", after, before)
	}
	// Chosen cells beside a night's shard are refused.
	write("shards/s1", `{"total_cells": 4, "shard": "1/2", "cells": []}`)
	if _, out, err := sb.runErr(script+" merge", env); err == nil || !strings.Contains(string(out), "merge them apart") {
		t.Errorf("cells beside a shard: %v\n%s", err, out)
	}
	os.RemoveAll(filepath.Join(sb.dir, "shards", "s1"))
	os.RemoveAll(filepath.Join(sb.dir, "nights"))
	if _, out, err := sb.runErr(script+" merge", env); err == nil || !strings.Contains(string(out), "no night") {
		t.Errorf("cells with no night to amend: %v\n%s", err, out)
	}
	if _, out, err := sb.runErr(script+" shard", shardEnv(map[string]string{"FC_CELLS": "3;rm"})); err == nil || !strings.Contains(string(out), "want cell numbers") {
		t.Errorf("cells 3;rm: %v\n%s", err, out)
	}
}
