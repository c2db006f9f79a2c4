package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The CI files that run fencecheck for a team: the GitHub Action
// (action.yml, its steps in scripts/action.sh), the example workflow that
// uses it, the GitLab template (templates/gitlab) and the example pipeline
// that includes it. Their steps run here in a sandbox, with a fencecheck on
// PATH that records its arguments (and sudo that runs its command): each
// shard's matrix command parses and lists its cells (matrix --list), the
// shards together hold every cell of the unsharded matrix exactly once, the
// zoo's matrix runs every client of examples/clients, the merge merges
// the shards' results, against the last night when there is one, keeps the
// night and writes the trends of the nights.
func TestNightlyWorkflows(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	t.Run("github-nightly.yml", testGitHubWorkflow)
	t.Run("gitlab-nightly.yml", testGitLabPipeline)
}

// dispatchInput is a workflow's ${{ inputs.NAME }} (workflow_dispatch's
// inputs), which a scheduled run leaves empty.
var dispatchInput = regexp.MustCompile(`\$\{\{ inputs\.[a-z-]+ \}\}`)

// repoFile is a file of the repository, by its path from the root.
func repoFile(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: not valid YAML: %v", path, err)
	}
	return doc
}

// sandbox is a directory with a fencecheck and a sudo on PATH: fencecheck
// records each call's arguments (one a line, a call ended by "--") and,
// for merge, writes the merged matrix.json; images tags prints a tag per
// kind.
type sandbox struct {
	dir, calls string
	env        []string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	s := &sandbox{dir: dir, calls: filepath.Join(dir, "calls")}
	stub := `#!/usr/bin/env bash
printf '%s\n' "$@" -- >>"$FC_CALLS"
if [ "$1 $2" = "images tags" ]; then
	for k in "${@:3}"; do echo "fencecheck/$k:0123456789ab"; done
fi
if [ "$1 $2" = "images save" ]; then
	mkdir -p "$3"
	for k in "${@:4}"; do : >"$3/fencecheck_$k@0123456789ab.tar"; done
fi
if [ "$1" = matrix ] && [ "${*: -1}" = --images ]; then
	printf '%s\n' ${FC_STUB_KINDS:-base etcd worker}
fi
if [ "$1" = merge ] && [ -n "${FC_STUB_MERGE_FAIL:-}" ]; then
	exit 254
fi
if [ "$1" = merge ]; then
	while [ $# -gt 0 ]; do
		if [ "$1" = --results ]; then mkdir -p "$2" && echo '{}' >"$2/matrix.json"; fi
		shift
	done
fi
`
	os.WriteFile(filepath.Join(bin, "fencecheck"), []byte(stub), 0o755)
	os.WriteFile(filepath.Join(bin, "sudo"), []byte("#!/usr/bin/env bash\nexec \"$@\"\n"), 0o755)
	// git clone makes its directory, and reaches no network.
	os.WriteFile(filepath.Join(bin, "git"), []byte("#!/usr/bin/env bash\nmkdir -p \"${@: -1}\"\n"), 0o755)
	s.env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "FC_CALLS=" + s.calls, "HOME=" + os.Getenv("HOME"), "GITHUB_OUTPUT=" + filepath.Join(dir, "output")}
	return s
}

// run runs a bash script in the sandbox's directory with env, and returns
// the fencecheck calls it made, each as its arguments.
func (s *sandbox) run(t *testing.T, script string, env map[string]string) [][]string {
	t.Helper()
	calls, out, err := s.runErr(script, env)
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return calls
}

// runErr is run that returns the script's error and output instead of
// failing the test.
func (s *sandbox) runErr(script string, env map[string]string) ([][]string, []byte, error) {
	os.Remove(s.calls)
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = s.dir
	cmd.Env = append([]string{}, s.env...)
	if gp := os.Getenv("GOPATH"); gp != "" {
		cmd.Env = append(cmd.Env, "GOPATH="+gp)
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	b, _ := os.ReadFile(s.calls)
	var calls [][]string
	var cur []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "--" {
			calls = append(calls, cur)
			cur = nil
			continue
		}
		cur = append(cur, l)
	}
	return calls, out, err
}

// matrixCall is the call of fencecheck matrix among calls, without its
// --results and --quiet, and its results directory.
func matrixCall(t *testing.T, calls [][]string) (args []string, results string) {
	t.Helper()
	for _, c := range calls {
		if len(c) == 0 || c[0] != "matrix" {
			continue
		}
		for i := 1; i < len(c); i++ {
			switch {
			case c[i] == "--results" && i+1 < len(c):
				i++
				results = c[i]
			case c[i] == "--quiet":
			default:
				args = append(args, c[i])
			}
		}
		return args, results
	}
	t.Fatalf("no fencecheck matrix among %q", calls)
	return nil, ""
}

// listCells lists a matrix's cells (matrix ARGS --list), with client
// directories under prefix read from examples/clients here.
func listCells(t *testing.T, args []string, prefix string) []string {
	t.Helper()
	var a []string
	for _, x := range args {
		if prefix != "" {
			x = strings.ReplaceAll(x, prefix, repoFile("examples", "clients")+"/")
		}
		a = append(a, x)
	}
	var out, errb bytes.Buffer
	if code := run(append(append([]string{"matrix"}, a...), "--list"), &out, &errb); code != 0 {
		t.Fatalf("matrix %v --list: exit %d: %s", a, code, errb.String())
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}

// checkShards checks that the shards' cells are the whole matrix's, each
// once; shardArgs are the shards' matrix arguments (with --shard I/N).
func checkShards(t *testing.T, shardArgs [][]string, prefix string) []string {
	t.Helper()
	whole := slices.Clone(shardArgs[0])
	i := slices.Index(whole, "--shard")
	if i < 0 {
		t.Fatalf("shard's matrix %v has no --shard", whole)
	}
	all := listCells(t, slices.Delete(whole, i, i+2), prefix)
	var got []string
	for _, a := range shardArgs {
		got = append(got, listCells(t, a, prefix)...)
	}
	slices.Sort(got)
	slices.Sort(all)
	if !slices.Equal(got, all) {
		t.Errorf("the shards' cells (%d) are not the matrix's (%d), each once", len(got), len(all))
	}
	return all
}

// checkZooClients checks that the zoo's cells run every client program of
// examples/clients (sh-redis is the example of --client-image; client-go-cle
// runs on kubernetes-cle, whose kube-apiserver image, 7 to 13 minutes of
// compiling on 2 cores, the weekly zoo job leaves out, as its comment says).
func checkZooClients(t *testing.T, cells []string) {
	t.Helper()
	entries, _ := os.ReadDir(repoFile("examples", "clients"))
	for _, e := range entries {
		if e.Name() == "sh-redis" || e.Name() == "client-go-cle" {
			continue
		}
		if !slices.ContainsFunc(cells, func(c string) bool { return strings.Contains(c, "examples/clients/"+e.Name()) }) {
			t.Errorf("the zoo matrix runs no cell of examples/clients/%s", e.Name())
		}
	}
}

func str(v any) string { s, _ := v.(string); return s }

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }

func listOf(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case nil:
		return nil
	}
	return []any{v}
}

// testGitHubWorkflow runs the example workflow's uses of the action:
// action.yml's inputs' defaults, overridden by each step's with:, given to
// scripts/action.sh as the action's steps give them.
func testGitHubWorkflow(t *testing.T) {
	action := readYAML(t, repoFile("action.yml"))
	wf := readYAML(t, repoFile("examples", "ci", "github-nightly.yml"))
	defaults := map[string]string{}
	for name, in := range mapOf(action["inputs"]) {
		defaults[name] = fmt.Sprint(mapOf(in)["default"])
	}
	// The action's steps: their env names the inputs.
	var steps []map[string]any
	for _, s := range listOf(mapOf(action["runs"])["steps"]) {
		steps = append(steps, mapOf(s))
	}
	sb := newSandbox(t)
	// The expressions the steps' env uses, as the runner gives them: the
	// first attempt of run 7001.
	ghCtx := map[string]string{"github.run_attempt": "1", "github.run_id": "7001", "runner.temp": filepath.Join(sb.dir, "temp")}
	expand := func(s string, inputs map[string]string) string {
		var out strings.Builder
		for {
			i := strings.Index(s, "${{ ")
			j := strings.Index(s, " }}")
			if i < 0 || j < i {
				return out.String() + s
			}
			expr := s[i+4 : j]
			v, ok := ghCtx[expr]
			if name, in := strings.CutPrefix(expr, "inputs."); in {
				v, ok = inputs[name], true
			}
			if !ok {
				t.Fatalf("an env value uses ${{ %s }}, which this test does not give", expr)
			}
			// A value is not expanded again (the runner does not).
			out.WriteString(s[:i] + v)
			s = s[j+3:]
		}
	}
	stepEnv := func(id string, inputs map[string]string) map[string]string {
		for _, m := range steps {
			if str(m["id"]) != id {
				continue
			}
			env := map[string]string{}
			for k, v := range mapOf(m["env"]) {
				env[k] = expand(str(v), inputs)
			}
			return env
		}
		t.Fatalf("action.yml has no step %s", id)
		return nil
	}
	checkCaches(t, steps)
	outputs := func() map[string]string {
		b, _ := os.ReadFile(filepath.Join(sb.dir, "output"))
		os.Remove(filepath.Join(sb.dir, "output"))
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			k, v, _ := strings.Cut(l, "=")
			m[k] = v
		}
		return m
	}
	script := repoFile("scripts", "action.sh")
	abs, _ := filepath.Abs(script)
	uses := map[string]map[string]string{} // job -> its action step's inputs
	jobs := mapOf(wf["jobs"])
	for name, j := range jobs {
		for _, s := range listOf(mapOf(j)["steps"]) {
			if !strings.HasPrefix(str(mapOf(s)["uses"]), "fencecheck/fencecheck@") {
				continue
			}
			in := maps.Clone(defaults)
			for k, v := range mapOf(mapOf(s)["with"]) {
				if _, ok := defaults[k]; !ok {
					t.Errorf("job %s: the action has no input %q", name, k)
				}
				// A scheduled night: the workflow's dispatch inputs are empty.
				in[k] = dispatchInput.ReplaceAllString(fmt.Sprint(v), "")
			}
			uses[name] = in
		}
	}
	var shardJobs []string
	for name, in := range uses {
		if in["mode"] == "shard" {
			shardJobs = append(shardJobs, name)
		}
	}
	slices.Sort(shardJobs)
	if !slices.Equal(shardJobs, []string{"shard", "zoo"}) {
		t.Fatalf("jobs running shards with the action: %v, want shard and zoo", shardJobs)
	}
	for _, name := range shardJobs {
		in := uses[name]
		var shardArgs [][]string
		shards := listOf(mapOf(mapOf(mapOf(jobs[name])["strategy"])["matrix"])["shard"])
		for _, i := range shards {
			si := maps.Clone(in)
			si["shard"] = strings.ReplaceAll(si["shard"], "${{ matrix.shard }}", fmt.Sprint(i))
			args, results := matrixCall(t, sb.run(t, abs+" shard", stepEnv("shard", si)))
			if results != in["results"] {
				t.Errorf("job %s: matrix writes %s, the action uploads %s", name, results, in["results"])
			}
			shardArgs = append(shardArgs, args)
		}
		cells := checkShards(t, shardArgs, "fencecheck/examples/clients/")
		t.Logf("job %s: %d cells in %d shards", name, len(cells), len(shards))
		if name == "zoo" {
			checkZooClients(t, cells)
		}
		// A merge job merges this job's artifacts: it needs the job and
		// runs when a shard failed too.
		merged := false
		for mname, min := range uses {
			mj := mapOf(jobs[mname])
			if min["mode"] != "merge" || min["artifact-prefix"] != in["artifact-prefix"] {
				continue
			}
			merged = true
			if !slices.Contains(listOf(mj["needs"]), any(name)) || !strings.Contains(str(mj["if"]), "always()") {
				t.Errorf("merge job %s: needs %v, if %q: want it to need %s, always", mname, mj["needs"], mj["if"], name)
			}
			if name == "zoo" {
				// The zoo page renders the merged zoo.
				found := false
				for _, s := range listOf(mj["steps"]) {
					if f := strings.Fields(str(mapOf(s)["run"])); len(f) > 2 && f[1] == "zoo" && f[len(f)-1] == min["results"] {
						found = true
					}
				}
				if !found {
					t.Errorf("job %s renders no zoo page of %s", mname, min["results"])
				}
			}
		}
		if !merged {
			t.Errorf("no job merges job %s's artifacts (%s*)", name, in["artifact-prefix"])
		}
	}

	// The image cache's key: the kinds the shard's cells use (matrix
	// --images, with the shard's own arguments), the tags of the servers'
	// images, then the worker's; images builds those kinds, save writes
	// those.
	in := maps.Clone(uses["shard"])
	in["shard"] = "1/4"
	calls := sb.run(t, abs+" images-key", stepEnv("image-key", in))
	out := outputs()
	shardArgs, _ := matrixCall(t, sb.run(t, abs+" shard", stepEnv("shard", in)))
	outputs()
	var listed []string
	for _, c := range calls {
		if len(c) > 0 && c[0] == "matrix" {
			listed = c
		}
	}
	if i := slices.Index(listed, "--images"); i < 0 || !slices.Equal(withoutResults(listed[1:i]), shardArgs) {
		t.Errorf("images-key lists the images of matrix %q, the shard runs matrix %q", listed, shardArgs)
	}
	const serverTags = "fencecheck/base:0123456789ab\nfencecheck/etcd:0123456789ab\n"
	stem := "fencecheck-images-" + hash16(serverTags)
	if out["kinds"] != "base etcd worker" || out["restore-key"] != stem+"-" || out["key"] != stem+"-"+hash16("fencecheck/worker:0123456789ab\n") {
		t.Errorf("images-key outputs %q: want the kinds, and keys of the servers' tags then the worker's (%s-...)", out, stem)
	}
	// The real matrix lists the images of each of the example's shards:
	// base first, the worker last, all four shards together the targets'.
	all := map[string]bool{}
	for i := 1; i <= 4; i++ {
		args := slices.Clone(shardArgs)
		args[slices.Index(args, "--shard")+1] = fmt.Sprintf("%d/4", i)
		var real bytes.Buffer
		code := run(append(append([]string{"matrix"}, args...), "--images"), &real, io.Discard)
		kinds := strings.Fields(real.String())
		if code != 0 || len(kinds) < 3 || kinds[0] != "base" || kinds[len(kinds)-1] != "worker" {
			t.Errorf("matrix %q --images: exit %d, %q", args, code, real.String())
		}
		for _, k := range kinds {
			all[k] = true
		}
	}
	if got := slices.Sorted(maps.Keys(all)); !slices.Equal(got, []string{"base", "consul", "etcd", "worker", "zookeeper"}) {
		t.Errorf("the example's shards use the images of %q, want its targets' (redis runs on the base)", got)
	}
	for step, want := range map[string][]string{
		"images": {"images", "build", "base", "etcd", "worker"},
		"save":   {"images", "save", filepath.Join(sb.dir, "temp", "fencecheck", "images"), "base", "etcd", "worker"},
	} {
		env := map[string]string{"FC_KINDS": out["kinds"], "FC_IMAGE_CACHE": filepath.Join(sb.dir, "temp", "fencecheck", "images")}
		calls := sb.run(t, abs+" "+step, env)
		if !slices.ContainsFunc(calls, func(c []string) bool { return slices.Equal(c, want) }) {
			t.Errorf("action.sh %s: calls %q, want %q", step, calls, want)
		}
	}

	testGitHubMerge(t, sb, abs, defaults, stepEnv)
}

// withoutResults is a matrix's arguments without --results and --quiet.
func withoutResults(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--results":
			i++
		case "--quiet":
		default:
			out = append(out, args[i])
		}
	}
	return out
}

func hash16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}

// checkCaches checks the action's caches: the Go caches keyed by the
// action's own key (go-cache: setup-go's cache off, the Go version an
// input whose default is go.mod's minor release), restored before the
// install and saved after it on a miss; the image cache keyed by the
// shard's images (images-key), saved on a miss only, under the key it
// was restored by; the nights' cache and the artifacts named per attempt
// or uploaded with overwrite, so that a re-run saves and uploads its own.
func checkCaches(t *testing.T, steps []map[string]any) {
	t.Helper()
	var restores, saves, uploads []map[string]any
	for _, m := range steps {
		switch u := str(m["uses"]); {
		case strings.HasPrefix(u, "actions/setup-go@"):
			w := mapOf(m["with"])
			if fmt.Sprint(w["cache"]) != "false" || str(w["go-version"]) != "${{ inputs.go-version }}" || w["cache-dependency-path"] != nil {
				t.Errorf("setup-go with %v: want cache false and go-version from the input", w)
			}
		case strings.HasPrefix(u, "actions/cache/restore@"):
			restores = append(restores, m)
		case strings.HasPrefix(u, "actions/cache/save@"):
			saves = append(saves, m)
		case strings.HasPrefix(u, "actions/upload-artifact@"):
			uploads = append(uploads, m)
		}
	}
	if len(restores) != 3 || len(saves) != 3 {
		t.Fatalf("%d caches restored, %d saved: want the Go caches, the images and the nights", len(restores), len(saves))
	}
	for i, key := range []string{"${{ steps.go-cache.outputs.key }}", "${{ steps.image-key.outputs.key }}", "${{ inputs.name }}-nights-${{ github.run_id }}-${{ github.run_attempt }}"} {
		r, sv := mapOf(restores[i]["with"]), mapOf(saves[i]["with"])
		if str(r["key"]) != key || str(sv["key"]) != key || str(r["path"]) != str(sv["path"]) || r["restore-keys"] == nil {
			t.Errorf("cache %d: restored by %v, saved by %v: want key %s, one path, restore-keys", i, r, sv, key)
		}
		if strings.Contains(str(r["path"]), "github.action_path") {
			t.Errorf("cache %d: path %s is outside the workspace's caches", i, r["path"])
		}
		if i < 2 && !strings.Contains(str(saves[i]["if"]), "cache-hit != 'true'") {
			t.Errorf("cache %d is saved on a hit too: if %q", i, saves[i]["if"])
		}
	}
	for _, u := range uploads {
		if fmt.Sprint(mapOf(u["with"])["overwrite"]) != "true" {
			t.Errorf("upload %v: without overwrite, a re-run's upload of the same name is refused", u["with"])
		}
	}
	action := readYAML(t, repoFile("action.yml"))
	gomod, _ := os.ReadFile(repoFile("go.mod"))
	var goLine string
	for _, l := range strings.Split(string(gomod), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			goLine = v
		}
	}
	def := str(mapOf(mapOf(action["inputs"])["go-version"])["default"])
	if parts := strings.SplitN(goLine, ".", 3); len(parts) < 2 || def != parts[0]+"."+parts[1] {
		t.Errorf("go-version's default %q: want go.mod's minor release of go %s (its newest patch, not one fetched every job)", def, goLine)
	}
}

// testGitHubMerge runs the merge mode for a night, a re-run of it and the
// next night, each on a fresh runner that has only the nights' cache (a
// tar): the re-run's night replaces its first attempt's (not compared with
// it), the next night is compared with the re-run's.
func testGitHubMerge(t *testing.T, sb *sandbox, abs string, defaults map[string]string, stepEnv func(string, map[string]string) map[string]string) {
	in := maps.Clone(defaults)
	in["mode"] = "merge"
	env := stepEnv("merge", in)
	env["FC_SHARDS"] = filepath.Join(sb.dir, "shards")
	for _, s := range []string{"fencecheck-shard-1-of-2-attempt-1", "fencecheck-shard-2-of-2-attempt-1"} {
		os.MkdirAll(filepath.Join(sb.dir, "shards", s), 0o755)
		os.WriteFile(filepath.Join(sb.dir, "shards", s, "matrix.json"), []byte("{}"), 0o644)
	}
	nightsDir := filepath.Join(sb.dir, in["nights"])
	for i, night := range []struct{ run, attempt string }{{"7001", "1"}, {"7001", "2"}, {"7002", "1"}} {
		os.RemoveAll(filepath.Join(sb.dir, in["results"]))
		os.RemoveAll(nightsDir) // a fresh runner: the nights come from the cache's tar
		env["FC_RUN_ID"], env["FC_ATTEMPT"] = night.run, night.attempt
		calls := sb.run(t, abs+" merge", env)
		if len(calls) != 2 || calls[0][0] != "merge" || calls[1][0] != "trends" || calls[1][1] != in["nights"] {
			t.Fatalf("night %v: calls %q, want merge, then trends %s", night, calls, in["nights"])
		}
		want := []string{"merge", "--results", in["results"], env["FC_SHARDS"] + "/fencecheck-shard-1-of-2-attempt-1", env["FC_SHARDS"] + "/fencecheck-shard-2-of-2-attempt-1"}
		if i == 2 {
			// The re-run's night is the baseline of the next; the
			// first attempt's was forgotten.
			want = slices.Insert(want, 3, "--baseline", in["nights"])
		}
		if !slices.Equal(calls[0], want) {
			t.Errorf("night %v: %q, want %q", night, calls[0], want)
		}
		nights, _ := filepath.Glob(filepath.Join(nightsDir, "2*Z"))
		var runs []string
		for _, n := range nights {
			b, _ := os.ReadFile(filepath.Join(n, "ci-run"))
			runs = append(runs, strings.TrimSpace(string(b)))
		}
		slices.Sort(runs)
		wantRuns := map[int][]string{0: {"7001 1"}, 1: {"7001 2"}, 2: {"7001 2", "7002 1"}}[i]
		if !slices.Equal(runs, wantRuns) {
			t.Errorf("night %v: nights kept %q, want %q", night, runs, wantRuns)
		}
		// The next night gets a later stamp.
		for j, n := range nights {
			os.Rename(n, filepath.Join(nightsDir, fmt.Sprintf("2000010%dT000000Z", j+1)))
		}
		if _, err := os.Stat(env["FC_NIGHTS_TAR"]); err != nil {
			t.Fatalf("night %v: the nights' cache was not written: %v", night, err)
		}
		// The renamed nights are what the cache holds.
		if err := exec.Command("tar", "--sparse", "-cf", env["FC_NIGHTS_TAR"], "-C", nightsDir, ".").Run(); err != nil {
			t.Fatal(err)
		}
	}
}

// gitlabJob is a job of the template with its extends resolved (the last
// extended wins, and the job itself over them; maps are merged key by
// key), as GitLab merges them.
func gitlabJob(doc map[string]any, name string) map[string]any {
	job := mapOf(doc[name])
	out := map[string]any{}
	over := func(k string, v any) {
		if old, ok := out[k].(map[string]any); ok {
			if nv, ok := v.(map[string]any); ok {
				merged := maps.Clone(old)
				maps.Copy(merged, nv)
				v = merged
			}
		}
		out[k] = v
	}
	for _, e := range listOf(job["extends"]) {
		for k, v := range gitlabJob(doc, str(e)) {
			over(k, v)
		}
	}
	for k, v := range job {
		if k != "extends" {
			over(k, v)
		}
	}
	return out
}

// flatten is a script's lines, nested lists (YAML aliases) flattened.
func flatten(v any) []string {
	var out []string
	for _, x := range listOf(v) {
		if l, ok := x.([]any); ok {
			out = append(out, flatten(l)...)
			continue
		}
		out = append(out, str(x))
	}
	return out
}

// testGitLabPipeline checks the template's structure (tags, rules, needs,
// the caches' policies) and runs the shard, zoo and merge jobs' scripts in
// the sandbox, with the example pipeline's variables over the template's.
func testGitLabPipeline(t *testing.T) {
	tmpl := readYAML(t, repoFile("templates", "gitlab", "fencecheck.gitlab-ci.yml"))
	ex := readYAML(t, repoFile("examples", "ci", "gitlab-nightly.yml"))
	inc := fmt.Sprint(ex["include"])
	if !strings.Contains(inc, "templates/gitlab/fencecheck.gitlab-ci.yml") {
		t.Errorf("the example includes %s, not the template", inc)
	}
	vars := map[string]string{}
	for k, v := range mapOf(tmpl["variables"]) {
		vars[k] = fmt.Sprint(v)
	}
	for k, v := range mapOf(ex["variables"]) {
		if _, ok := vars[k]; !ok {
			t.Errorf("the example sets %s, which the template does not read", k)
		}
		vars[k] = fmt.Sprint(v)
	}
	jobs := map[string]map[string]any{}
	for name := range tmpl {
		if strings.HasPrefix(name, "fencecheck-") {
			jobs[name] = gitlabJob(tmpl, name)
		}
	}
	want := []string{"fencecheck-image-keys", "fencecheck-images", "fencecheck-merge", "fencecheck-shard", "fencecheck-zoo", "fencecheck-zoo-page"}
	got := slices.Sorted(maps.Keys(jobs))
	if !slices.Equal(got, want) {
		t.Fatalf("jobs %v, want %v", got, want)
	}
	for name, j := range jobs {
		if fmt.Sprint(j["tags"]) != "[fencecheck]" || j["rules"] == nil || j["stage"] == nil {
			t.Errorf("%s: tags %v, rules %v, stage %v: want the fencecheck runner's tag, rules and a stage", name, j["tags"], j["rules"], j["stage"])
		}
		if _, ok := j["when"]; ok {
			t.Errorf("%s: when beside rules (GitLab refuses it)", name)
		}
	}
	rules := func(name string) string { return fmt.Sprint(jobs[name]["rules"]) }
	for _, name := range []string{"fencecheck-shard", "fencecheck-merge"} {
		if !strings.Contains(rules(name), `$FENCECHECK_ZOO == "1" when:never`) && !strings.Contains(rules(name), `if:$FENCECHECK_ZOO == "1" when:never`) {
			t.Errorf("%s runs on the zoo's schedule: rules %s", name, rules(name))
		}
	}
	for _, name := range []string{"fencecheck-zoo", "fencecheck-zoo-page"} {
		if !strings.Contains(rules(name), `$FENCECHECK_ZOO == "1" &&`) {
			t.Errorf("%s runs outside the zoo's schedule: rules %s", name, rules(name))
		}
	}
	needs := func(name string) string { return fmt.Sprint(jobs[name]["needs"]) }
	for name, w := range map[string]string{
		"fencecheck-images": "[fencecheck-image-keys]", "fencecheck-shard": "[fencecheck-image-keys fencecheck-images]",
		"fencecheck-merge": "[fencecheck-shard]", "fencecheck-zoo": "[fencecheck-image-keys fencecheck-images]", "fencecheck-zoo-page": "[fencecheck-zoo]",
	} {
		if needs(name) != w {
			t.Errorf("%s needs %s, want %s", name, needs(name), w)
		}
	}
	if !strings.Contains(rules("fencecheck-merge"), "when:always") || !strings.Contains(rules("fencecheck-zoo-page"), "when:always") {
		t.Errorf("merge and the zoo page do not run when a shard failed: %s, %s", rules("fencecheck-merge"), rules("fencecheck-zoo-page"))
	}
	// The image caches: one per image, the same keys everywhere, pushed by
	// fencecheck-images alone.
	caches := func(name string) (keys, policies []string) {
		for _, c := range listOf(jobs[name]["cache"]) {
			keys = append(keys, str(mapOf(c)["key"]))
			policies = append(policies, str(mapOf(c)["policy"]))
		}
		return keys, policies
	}
	pushKeys, pushPol := caches("fencecheck-images")
	if len(pushKeys) != 6 || slices.Compact(slices.Clone(pushPol))[0] != "pull-push" || len(slices.Compact(slices.Clone(pushPol))) != 1 {
		t.Errorf("fencecheck-images caches %v %v: want 6 (a kind each), pull-push", pushKeys, pushPol)
	}
	for _, name := range []string{"fencecheck-shard", "fencecheck-zoo"} {
		keys, pol := caches(name)
		if !slices.Equal(keys, pushKeys) || slices.ContainsFunc(pol, func(p string) bool { return p != "pull" }) {
			t.Errorf("%s caches %v %v: want %v, pull only", name, keys, pol, pushKeys)
		}
	}
	for _, k := range pushKeys {
		if !strings.HasPrefix(k, "$FENCECHECK_IMAGE_") {
			t.Errorf("cache key %s: not an image's tag", k)
		}
	}
	merge := jobs["fencecheck-merge"]
	arts := mapOf(merge["artifacts"])
	if fmt.Sprint(arts["paths"]) != "[nightly/ nights/]" || fmt.Sprint(mapOf(arts["reports"])["junit"]) != "nightly/matrix-junit.xml" {
		t.Errorf("merge's artifacts %v: want the merged results, the nights (trends with what they link) and the JUnit report", arts)
	}

	// The scripts, run in the sandbox.
	sb := newSandbox(t)
	runJob := func(name string, env map[string]string) [][]string {
		e := maps.Clone(vars)
		for k, v := range env {
			e[k] = v
		}
		return sb.run(t, strings.Join(flatten(jobs[name]["script"]), "\n"), e)
	}
	for _, name := range []string{"fencecheck-shard", "fencecheck-zoo"} {
		n := fmt.Sprint(jobs[name]["parallel"])
		var shardArgs [][]string
		for i := 1; i <= 4; i++ {
			args, results := matrixCall(t, runJob(name, map[string]string{"CI_NODE_INDEX": fmt.Sprint(i), "CI_NODE_TOTAL": n, "FENCECHECK_VERSION": "latest"}))
			shardArgs = append(shardArgs, args)
			if !strings.HasSuffix(results, "-"+fmt.Sprint(i)) {
				t.Errorf("%s shard %d writes %s", name, i, results)
			}
		}
		if n != "4" {
			t.Errorf("%s: parallel %s", name, n)
		}
		cells := checkShards(t, shardArgs, ".fencecheck/src/examples/clients/")
		t.Logf("%s: %d cells in %s shards", name, len(cells), n)
		if name == "fencecheck-zoo" {
			checkZooClients(t, cells)
		}
	}
	// The image caches' keys: the kinds the matrix uses (matrix
	// --images), a key of their tags each; a kind it does not use, a key
	// whose cache stays empty. The images job writes each missing archive
	// once, into its kind's cache, and nothing when all are there.
	keys := runJob("fencecheck-image-keys", nil)
	if !slices.ContainsFunc(keys, func(c []string) bool {
		return c[0] == "matrix" && c[len(c)-1] == "--images" && !slices.Contains(c, "--shard")
	}) {
		t.Errorf("fencecheck-image-keys: calls %q, want matrix --images of the whole matrix", keys)
	}
	dotenv := map[string]string{}
	b, _ := os.ReadFile(filepath.Join(sb.dir, "image-keys.env"))
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		dotenv[k] = v
	}
	if dotenv["FENCECHECK_IMAGE_ETCD_KINDS"] != "etcd" || dotenv["FENCECHECK_IMAGE_WORKER_KINDS"] != "worker" || dotenv["FENCECHECK_IMAGE_CONSUL_KINDS"] != "" ||
		dotenv["FENCECHECK_IMAGE_CONSUL"] != "fencecheck-image-consul-unused" || !strings.HasPrefix(dotenv["FENCECHECK_IMAGE_ETCD"], "fencecheck-image-etcd-") || len(dotenv) != 12 {
		t.Errorf("image-keys.env: %q", dotenv)
	}
	for pass, want := range [][]string{{"base", "etcd", "worker"}, nil} {
		var saved []string
		for _, c := range runJob("fencecheck-images", dotenv) {
			if len(c) > 3 && c[0] == "images" && c[1] == "save" {
				if c[2] != ".fencecheck/images/"+c[3] || len(c) != 4 {
					t.Errorf("images save %q: want a kind's archives in its own cache", c[2:])
				}
				saved = append(saved, c[3])
			}
		}
		if !slices.Equal(saved, want) {
			t.Errorf("fencecheck-images, pass %d: saved %q, want %q (each once)", pass+1, saved, want)
		}
	}
	for _, s := range []string{"shard-1", "shard-2"} {
		os.MkdirAll(filepath.Join(sb.dir, s), 0o755)
	}
	for night := 1; night <= 2; night++ {
		os.RemoveAll(filepath.Join(sb.dir, "nightly"))
		calls := runJob("fencecheck-merge", nil)
		wantMerge := []string{"merge", "--results", "nightly", "shard-1/", "shard-2/"}
		if night == 2 {
			wantMerge = slices.Insert(wantMerge, 3, "--baseline", "nights")
		}
		if len(calls) != 2 || !slices.Equal(calls[0], wantMerge) || !slices.Equal(calls[1], []string{"trends", "nights"}) {
			t.Errorf("night %d: calls %q, want %q then trends nights", night, calls, wantMerge)
		}
		if night == 1 {
			nights, _ := os.ReadDir(filepath.Join(sb.dir, "nights"))
			if len(nights) != 1 {
				t.Fatalf("nights: %v", nights)
			}
			os.Rename(filepath.Join(sb.dir, "nights", nights[0].Name()), filepath.Join(sb.dir, "nights", "00000000T000000Z"))
		}
	}
}
