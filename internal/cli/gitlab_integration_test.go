package cli

import (
	"archive/tar"
	"bytes"
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
)

// glDriver runs the stages of fencecheck's GitLab template
// (templates/gitlab/fencecheck.gitlab-ci.yml) as a GitLab shell runner
// would, for pipelines of a team's project that includes it: the jobs in
// stage order (.pre, test, deploy), each with its extends merged, its
// rules judged, its variables (template's, then the team's, then the
// job's, then the pipeline's, then the dotenv reports of the jobs it
// needs), in a fresh checkout of the project (a runner cleans untracked
// files between jobs) that holds what its caches and its needs' artifacts
// restore. A job's before_script and script run as one bash script (set
// -eo pipefail, as the runner's). Caches are a tar per key in the
// driver's store; a pull-push cache is uploaded only when a file under its
// paths is newer than its archive (the runner's "Archive is up to date!")
// and has any file at all. Differs from a runner: no Git strategy (the
// checkout is the team's one file), no artifact expiry, jobs one at a
// time, one runner (its Go caches are shared by every job, as a shell
// runner's are).
type glDriver struct {
	tmpl, team map[string]any
	dir        string // the driver's own: checkouts, caches, artifacts
	repo       string // FENCECHECK_REPO: the repository the jobs clone
	version    string // FENCECHECK_VERSION
	uploads    map[string]int
	goEnv      []string // the runner's GOCACHE and GOMODCACHE
}

// glPipeline is one pipeline's jobs: their outcome, log and artifacts.
type glPipeline struct {
	name      string
	failed    map[string]bool // job (NAME or NAME I/N) -> failed
	logs      map[string]string
	artifacts map[string]string // job -> its artifacts' directory
	dotenv    map[string]string
	wall      time.Duration
}

func newGLDriver(t *testing.T) *glDriver {
	t.Helper()
	repo, _ := filepath.Abs(repoFile())
	version := "HEAD"
	if b, err := exec.Command("git", "-C", repo, "symbolic-ref", "--short", "-q", "HEAD").Output(); err == nil && len(bytes.TrimSpace(b)) > 0 {
		version = string(bytes.TrimSpace(b)) // a branch: what git fetch names
	}
	d := &glDriver{
		tmpl:    readYAML(t, repoFile("templates", "gitlab", "fencecheck.gitlab-ci.yml")),
		team:    readYAML(t, filepath.Join("testdata", "gitlab", "team.gitlab-ci.yml")),
		dir:     t.TempDir(),
		repo:    "file://" + repo,
		version: version,
		uploads: map[string]int{},
	}
	os.MkdirAll(filepath.Join(d.dir, "cache"), 0o755)
	// A shell runner's Go caches persist from job to job and night to
	// night: the test's own.
	for _, v := range []string{"GOCACHE", "GOMODCACHE"} {
		b, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		d.goEnv = append(d.goEnv, v+"="+strings.TrimSpace(string(b)))
	}
	return d
}

// job is a job of the team's pipeline: the template's, with the team's
// definition of the same name over it (maps merged key by key).
func (d *glDriver) job(name string) map[string]any {
	all := maps.Clone(d.tmpl)
	for k, v := range d.team {
		if old, ok := all[k].(map[string]any); ok {
			if nv, ok := v.(map[string]any); ok {
				m := maps.Clone(old)
				maps.Copy(m, nv)
				v = m
			}
		}
		all[k] = v
	}
	return gitlabJob(all, name)
}

// vars are the template's variables, the team's over them.
func (d *glDriver) vars() map[string]string {
	v := map[string]string{}
	for _, doc := range []map[string]any{d.tmpl, d.team} {
		for k, x := range mapOf(doc["variables"]) {
			v[k] = fmt.Sprint(x)
		}
	}
	return v
}

var glVar = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// expand expands $VAR and ${VAR} in s (GitLab's expansion of keys).
func expand(s string, env map[string]string) string {
	return glVar.ReplaceAllStringFunc(s, func(m string) string { return env[glVar.FindStringSubmatch(m)[1]] })
}

// ruleIf judges a rules: if: expression of the forms the template uses:
// $VAR == "x", $VAR != "x", joined by && and ||, in parentheses.
func ruleIf(t *testing.T, expr string, env map[string]string) bool {
	t.Helper()
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "(") && strings.HasSuffix(expr, ")") && balanced(expr[1:len(expr)-1]) {
		return ruleIf(t, expr[1:len(expr)-1], env)
	}
	for _, op := range []string{"||", "&&"} {
		depth := 0
		for i := 0; i+1 < len(expr); i++ {
			switch expr[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth == 0 && expr[i:i+2] == op {
				l, r := ruleIf(t, expr[:i], env), ruleIf(t, expr[i+2:], env)
				if op == "||" {
					return l || r
				}
				return l && r
			}
		}
	}
	m := regexp.MustCompile(`^\$([A-Za-z_][A-Za-z0-9_]*)\s*(==|!=)\s*"([^"]*)"$`).FindStringSubmatch(expr)
	if m == nil {
		t.Fatalf("rules: if: %q: not an expression this driver judges", expr)
	}
	return (env[m[1]] == m[3]) == (m[2] == "==")
}

func balanced(s string) bool {
	depth := 0
	for _, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// jobRuns judges a job's rules: whether it runs, and whether it runs after a
// failure too (when: always).
func jobRuns(t *testing.T, job map[string]any, env map[string]string) (run, always bool) {
	for _, r := range listOf(job["rules"]) {
		rm := mapOf(r)
		if e, ok := rm["if"]; ok && !ruleIf(t, str(e), env) {
			continue
		}
		switch str(rm["when"]) {
		case "never":
			return false, false
		case "always":
			return true, true
		}
		return true, false
	}
	return false, false
}

// pipeline runs the team's pipeline once, scheduled, with the pipeline
// variables vars (over the YAML's).
func (d *glDriver) pipeline(t *testing.T, name string, vars map[string]string) glPipeline {
	t.Helper()
	p := glPipeline{name: name, failed: map[string]bool{}, logs: map[string]string{}, artifacts: map[string]string{}, dotenv: map[string]string{}}
	start := time.Now()
	stages := map[string][]string{}
	for k := range d.tmpl {
		if strings.HasPrefix(k, "fencecheck-") {
			j := d.job(k)
			stages[str(j["stage"])] = append(stages[str(j["stage"])], k)
		}
	}
	failedBefore := false
	for _, stage := range []string{".pre", "test", "deploy"} {
		names := stages[stage]
		// fencecheck-images needs fencecheck-image-keys: keys first.
		slices.SortFunc(names, func(a, b string) int { return strings.Compare(a, b) })
		if stage == ".pre" {
			slices.SortFunc(names, func(a, b string) int {
				return strings.Compare(strings.Replace(a, "image-keys", "image-0", 1), strings.Replace(b, "image-keys", "image-0", 1))
			})
		}
		for _, jn := range names {
			job := d.job(jn)
			env := d.vars()
			maps.Copy(env, map[string]string{"CI_PIPELINE_SOURCE": "schedule"})
			maps.Copy(env, vars)
			run, always := jobRuns(t, job, env)
			if !run || (failedBefore && !always) {
				continue
			}
			n := 1
			if x, ok := job["parallel"].(int); ok {
				n = x
			}
			for i := 1; i <= n; i++ {
				id := jn
				if n > 1 {
					id = fmt.Sprintf("%s %d/%d", jn, i, n)
				}
				ok := d.runJob(t, &p, id, jn, job, i, n, vars)
				if !ok {
					p.failed[id] = true
					failedBefore = true
				}
			}
		}
	}
	p.wall = time.Since(start)
	return p
}

// runJob runs one job (node i of n) and says whether it passed.
func (d *glDriver) runJob(t *testing.T, p *glPipeline, id, name string, job map[string]any, i, n int, pipeVars map[string]string) bool {
	t.Helper()
	proj := filepath.Join(d.dir, "builds", p.name, strings.ReplaceAll(id, "/", "-"))
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, ".gitlab-ci.yml"), []byte("# the team's pipeline\n"), 0o644)
	env := d.vars()
	for k, v := range mapOf(job["variables"]) {
		env[k] = fmt.Sprint(v)
	}
	maps.Copy(env, pipeVars)
	// The dotenv reports and artifacts of the jobs it needs.
	for _, need := range listOf(job["needs"]) {
		for jid, dir := range p.artifacts {
			if jid == str(need) || strings.HasPrefix(jid, str(need)+" ") {
				if err := os.CopyFS(proj, os.DirFS(dir)); err != nil {
					t.Fatalf("%s: the artifacts of %s: %v", id, jid, err)
				}
			}
		}
		if str(need) == "fencecheck-image-keys" {
			maps.Copy(env, p.dotenv)
		}
	}
	maps.Copy(env, map[string]string{
		"CI": "true", "GITLAB_CI": "true", "CI_PIPELINE_SOURCE": cmp.Or(pipeVars["CI_PIPELINE_SOURCE"], "schedule"), "CI_PROJECT_DIR": proj, "CI_JOB_NAME": id,
		"CI_NODE_INDEX": fmt.Sprint(i), "CI_NODE_TOTAL": fmt.Sprint(n),
		"FENCECHECK_REPO": d.repo, "FENCECHECK_VERSION": d.version,
		"HOME": os.Getenv("HOME"), "PATH": os.Getenv("PATH"),
	})
	if n == 1 {
		delete(env, "CI_NODE_INDEX")
		delete(env, "CI_NODE_TOTAL")
	}
	type cache struct {
		key, policy, when string
		paths             []string
	}
	var caches []cache
	for _, c := range listOf(job["cache"]) { // a list of caches, or one
		cm := mapOf(c)
		cc := cache{key: expand(str(cm["key"]), env), policy: cmp.Or(str(cm["policy"]), "pull-push"), when: cmp.Or(str(cm["when"]), "on_success")}
		for _, x := range listOf(cm["paths"]) {
			cc.paths = append(cc.paths, str(x))
		}
		caches = append(caches, cc)
	}
	restored := map[string]time.Time{}
	for _, c := range caches {
		if c.policy == "push" || c.key == "" {
			continue
		}
		arch := filepath.Join(d.dir, "cache", c.key+".tar")
		if st, err := os.Stat(arch); err == nil {
			if out, err := exec.Command("tar", "-xf", arch, "-C", proj).CombinedOutput(); err != nil {
				t.Fatalf("%s: cache %s: %v\n%s", id, c.key, err, out)
			}
			restored[c.key] = st.ModTime()
		}
	}
	script := append(flatten(job["before_script"]), flatten(job["script"])...)
	cmd := exec.Command("bash", "-eo", "pipefail", "-c", strings.Join(script, "\n"))
	cmd.Dir = proj
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, d.goEnv...)
	out, err := cmd.CombinedOutput()
	ok := err == nil
	p.logs[id] = string(out)
	logDir := filepath.Join(d.dir, "builds", p.name)
	if keep := os.Getenv("FENCECHECK_CI_LOGS"); keep != "" {
		logDir = filepath.Join(keep, "gitlab-"+p.name)
		os.MkdirAll(logDir, 0o755)
	}
	os.WriteFile(filepath.Join(logDir, strings.ReplaceAll(id, "/", "-")+".log"), out, 0o644)
	t.Logf("pipeline %s: job %s: %v", p.name, id, map[bool]string{true: "passed", false: fmt.Sprintf("failed (%v)", err)}[ok])
	// Caches: uploaded when the job's outcome allows, there is a file to
	// keep, and a file is newer than the archive restored.
	for _, c := range caches {
		if c.policy == "pull" || c.key == "" || (!ok && c.when == "on_success") {
			continue
		}
		var files []string
		newer := false
		for _, pth := range c.paths {
			filepath.WalkDir(filepath.Join(proj, pth), func(f string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() {
					return nil
				}
				rel, _ := filepath.Rel(proj, f)
				files = append(files, rel)
				if info, err := e.Info(); err == nil {
					if at, ok := restored[c.key]; !ok || info.ModTime().After(at) {
						newer = true
					}
				}
				return nil
			})
		}
		if len(files) == 0 || !newer {
			continue
		}
		arch := filepath.Join(d.dir, "cache", c.key+".tar")
		args := append([]string{"-cf", arch, "-C", proj, "--"}, files...)
		if out, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: cache %s: %v\n%s", id, c.key, err, out)
		}
		d.uploads[c.key]++
	}
	// Artifacts: when: always, or on success.
	arts := mapOf(job["artifacts"])
	if ok || str(arts["when"]) == "always" {
		adir := filepath.Join(d.dir, "artifacts", p.name, strings.ReplaceAll(id, "/", "-"))
		os.MkdirAll(adir, 0o755)
		for _, pat := range listOf(arts["paths"]) {
			matches, _ := filepath.Glob(filepath.Join(proj, strings.TrimSuffix(str(pat), "/")))
			for _, m := range matches {
				rel, _ := filepath.Rel(proj, m)
				if out, err := exec.Command("cp", "-a", m, filepath.Join(adir, rel)).CombinedOutput(); err != nil {
					t.Fatalf("%s: artifact %s: %v\n%s", id, rel, err, out)
				}
			}
		}
		if de := str(mapOf(arts["reports"])["dotenv"]); de != "" {
			b, _ := os.ReadFile(filepath.Join(proj, de))
			for _, l := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(l, "="); ok {
					p.dotenv[k] = v
				}
			}
		}
		if ju := str(mapOf(arts["reports"])["junit"]); ju != "" {
			if b, err := os.ReadFile(filepath.Join(proj, ju)); err == nil {
				os.MkdirAll(filepath.Dir(filepath.Join(adir, ju)), 0o755)
				os.WriteFile(filepath.Join(adir, ju), b, 0o644)
			}
		}
		p.artifacts[id] = adir
	}
	return ok
}

// archives are the image archives that a cache holds, and their files'
// modification times.
func (d *glDriver) archives(t *testing.T) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	entries, _ := os.ReadDir(filepath.Join(d.dir, "cache"))
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "fencecheck-image-") {
			continue
		}
		eachTarFile(t, filepath.Join(d.dir, "cache", e.Name()), func(h *tar.Header, _ io.Reader) bool {
			if strings.HasSuffix(h.Name, ".tar") {
				out[h.Name] = h.ModTime
			}
			return true
		})
	}
	return out
}

// The GitLab template's stages, driven as a runner runs them (glDriver),
// for four scheduled pipelines of a team's project (testdata/gitlab: the
// template included with a 2-cell etcd matrix in 2 shards): night 1 finds
// empty image caches and writes each image's archive once; nights 2 to 4
// write none and upload no image cache; night 3 is --strict and fails (its
// unfenced cell lost updates: merge exit 1, a JUnit failure with the
// story); night 4 passes again, merged against the nights before it. Then
// a pipeline from the web form re-runs cell 0 (FENCECHECK_CELLS) and
// amends night 4.
func TestGitLabTemplateStages(t *testing.T) {
	suite.All(t, "four nights of a sharded matrix through the GitLab template's stages")
	requireDocker(t)
	if os.Getuid() != 0 {
		t.Skip("the template's runner runs as root")
	}
	d := newGLDriver(t)
	nights := []struct {
		vars   map[string]string
		failed bool
	}{
		{map[string]string{}, false},
		{map[string]string{}, false},
		{map[string]string{"FENCECHECK_ARGS": "--time-limit 20s --strict"}, true},
		{map[string]string{}, false},
	}
	var first map[string]time.Time
	for i, n := range nights {
		name := fmt.Sprintf("night-%d", i+1)
		p := d.pipeline(t, name, n.vars)
		t.Logf("%s: %s", name, p.wall.Round(time.Second))
		if got := p.failed["fencecheck-merge"]; got != n.failed {
			t.Errorf("%s: merge failed %v, want %v:\n%s", name, got, n.failed, tail(p.logs["fencecheck-merge"], 40))
		}
		for id, f := range p.failed {
			if f && id != "fencecheck-merge" {
				t.Errorf("%s: job %s failed:\n%s", name, id, tail(p.logs[id], 40))
			}
		}
		junit := glJUnit(t, p)
		if n.failed != (junit.Failures > 0) || junit.Tests != 2 {
			t.Errorf("%s: JUnit %d tests, %d failures", name, junit.Tests, junit.Failures)
		}
		if n.failed && !slices.ContainsFunc(junit.Cases, func(c glCase) bool {
			return c.Failure != nil && strings.Contains(c.Failure.Text, "lost")
		}) {
			t.Errorf("%s: no JUnit failure tells the lost update: %+v", name, junit.Cases)
		}
		arch := d.archives(t)
		if i == 0 {
			first = arch
			if len(arch) < 2 {
				t.Errorf("night 1 cached image archives %v, want etcd's and the worker's at least", slices.Sorted(maps.Keys(arch)))
			}
		} else if !maps.EqualFunc(arch, first, time.Time.Equal) {
			t.Errorf("%s: the image archives changed: %v, after night 1 %v", name, arch, first)
		}
	}
	for key, n := range d.uploads {
		switch {
		case strings.HasPrefix(key, "fencecheck-image-") && strings.HasSuffix(key, "-unused"):
			t.Errorf("cache %s of a kind the matrix does not use was uploaded %d times", key, n)
		case strings.HasPrefix(key, "fencecheck-image-") && n != 1:
			t.Errorf("image cache %s uploaded %d times over four nights, want once", key, n)
		}
	}
	if n := d.uploads["fencecheck-nights"]; n != len(nights) {
		t.Errorf("the cache of nights was uploaded %d times over %d nights, want once a night", n, len(nights))
	}
	t.Logf("cache uploads: %v", d.uploads)

	// Cell 0 again, from the web form: night 4 amended.
	p := d.pipeline(t, "cell-0", map[string]string{"CI_PIPELINE_SOURCE": "web", "FENCECHECK_CELLS": "0"})
	if len(p.failed) > 0 {
		t.Fatalf("the cell's re-run failed: %v\n%s", p.failed, tail(p.logs["fencecheck-merge"], 40))
	}
	var m trends.Matrix
	b, err := os.ReadFile(filepath.Join(p.artifacts["fencecheck-merge"], "nightly", "matrix.json"))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil || len(m.Duplicates) != 1 || m.Duplicates[0].Cell != 0 || !strings.Contains(m.Duplicates[0].Kept.Shard, "shard-1") {
		t.Errorf("the cell's re-run: duplicates %+v, %v; want cell 0 kept from shard-1", m.Duplicates, err)
	}
	kept, _ := filepath.Glob(filepath.Join(p.artifacts["fencecheck-merge"], "nights", "*", "matrix.json"))
	if len(kept) != 4 {
		t.Errorf("after the cell's re-run the nights are %v, want 4 (night 4 amended in place)", kept)
	}
}

type glCase struct {
	Name    string `xml:"name,attr"`
	Failure *struct {
		Text string `xml:",chardata"`
	} `xml:"failure"`
}

type glSuite struct {
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Cases    []glCase `xml:"testcase"`
}

// glJUnit is the merge job's JUnit report.
func glJUnit(t *testing.T, p glPipeline) glSuite {
	t.Helper()
	var s glSuite
	b, err := os.ReadFile(filepath.Join(p.artifacts["fencecheck-merge"], "nightly", "matrix-junit.xml"))
	if err != nil {
		t.Errorf("%s: no JUnit report: %v", p.name, err)
		return s
	}
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Errorf("%s: JUnit report: %v", p.name, err)
	}
	return s
}
