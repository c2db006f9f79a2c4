package cli

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
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
	stepEnv := func(id string, inputs map[string]string) map[string]string {
		for _, m := range steps {
			if str(m["id"]) != id {
				continue
			}
			env := map[string]string{}
			for k, v := range mapOf(m["env"]) {
				s := str(v)
				if name, ok := strings.CutPrefix(s, "${{ inputs."); ok {
					s = inputs[strings.TrimSuffix(name, " }}")]
				}
				env[k] = s
			}
			return env
		}
		t.Fatalf("action.yml has no step %s", id)
		return nil
	}
	// The image cache: restored, then images, then saved on a miss under
	// the same key and path.
	var restore, save map[string]any
	for _, m := range steps {
		switch {
		case strings.HasPrefix(str(m["uses"]), "actions/cache/restore") && strings.Contains(str(mapOf(m["with"])["path"]), "images"):
			restore = mapOf(m["with"])
		case strings.HasPrefix(str(m["uses"]), "actions/cache/save") && strings.Contains(str(mapOf(m["with"])["path"]), "images"):
			if restore == nil {
				t.Errorf("the image cache is saved before it is restored")
			}
			save = mapOf(m["with"])
			if !strings.Contains(str(m["if"]), "cache-hit != 'true'") {
				t.Errorf("the image cache is saved on a hit too: if %q", m["if"])
			}
		}
	}
	if restore == nil || save == nil || restore["key"] != save["key"] || restore["path"] != save["path"] || !strings.Contains(str(restore["key"]), "steps.install.outputs.key") {
		t.Errorf("image cache: restored %v, saved %v: want one key (the images' tags) and one path", restore, save)
	}

	sb := newSandbox(t)
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
				in[k] = fmt.Sprint(v)
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

	// The merge: the shards downloaded, merged (against the last night
	// when there is one), kept as a night, the nights' trends written.
	in := maps.Clone(defaults)
	in["mode"], in["keep-nights"] = "merge", "1"
	env := stepEnv("merge", in)
	env["FC_SHARDS"] = filepath.Join(sb.dir, "shards")
	for _, s := range []string{"fencecheck-shard-1-of-2", "fencecheck-shard-2-of-2"} {
		os.MkdirAll(filepath.Join(sb.dir, "shards", s), 0o755)
		os.WriteFile(filepath.Join(sb.dir, "shards", s, "matrix.json"), []byte("{}"), 0o644)
	}
	for night := 1; night <= 2; night++ {
		os.RemoveAll(filepath.Join(sb.dir, in["results"]))
		calls := sb.run(t, abs+" merge", env)
		if len(calls) != 2 || calls[0][0] != "merge" || calls[1][0] != "trends" || calls[1][1] != in["nights"] {
			t.Fatalf("night %d: calls %q, want merge, then trends %s", night, calls, in["nights"])
		}
		want := []string{"merge", "--results", in["results"], env["FC_SHARDS"] + "/fencecheck-shard-1-of-2", env["FC_SHARDS"] + "/fencecheck-shard-2-of-2"}
		if night == 2 {
			want = slices.Insert(want, 3, "--baseline", in["nights"])
		}
		if !slices.Equal(calls[0], want) {
			t.Errorf("night %d: %q, want %q", night, calls[0], want)
		}
		nights, _ := os.ReadDir(filepath.Join(sb.dir, in["nights"]))
		if len(nights) != 1 {
			t.Errorf("night %d: %d nights kept, want 1 (keep-nights 1)", night, len(nights))
		}
		if night == 1 {
			// The next night gets a later stamp.
			old := filepath.Join(sb.dir, in["nights"], nights[0].Name())
			os.Rename(old, filepath.Join(sb.dir, in["nights"], "00000000T000000Z"))
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
	if len(pushKeys) != 4 || slices.Compact(slices.Clone(pushPol))[0] != "pull-push" || len(slices.Compact(slices.Clone(pushPol))) != 1 {
		t.Errorf("fencecheck-images caches %v %v: want 4, pull-push", pushKeys, pushPol)
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
