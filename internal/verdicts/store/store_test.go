package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
)

func TestNewRunPointsLatest(t *testing.T) {
	root := t.TempDir()
	r1, err := NewRun(root, "etcd-x", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if err := r1.WriteJSON(ResultsFile, map[string]bool{"valid": true}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r1.Path(HistoryFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r2, err := NewRun(root, "etcd-x", time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	target, err := filepath.EvalSymlinks(filepath.Join(root, Latest))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(r2.Dir)
	if target != want {
		t.Errorf("latest -> %s, want %s", target, want)
	}
	if filepath.Base(r1.Dir) != "20260102T030405.000Z" {
		t.Errorf("run dir %s", r1.Dir)
	}
	opened, err := Open(r1.Dir)
	if err != nil || opened.Name != "etcd-x" {
		t.Fatalf("Open: %+v %v", opened, err)
	}
	var v map[string]bool
	if err := opened.ReadJSON(ResultsFile, &v); err != nil || !v["valid"] {
		t.Errorf("ReadJSON: %v %v", v, err)
	}
	if _, err := Open(root); err == nil {
		t.Errorf("Open of a directory without a history: no error")
	}
}

func TestValidName(t *testing.T) {
	for name, ok := range map[string]bool{"etcd-lock-append-none": true, "a.b_c": true, "": false, "../x": false, "a/b": false, "latest": false, "-x": false,
		strings.Repeat("a", MaxNameLen): true, strings.Repeat("a", MaxNameLen+1): false} {
		if err := ValidName(name); (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v", name, err)
		}
	}
}

// Runs of one name started in the same millisecond get directories of
// their own (issue: the second truncated the first's history), and every
// one of them exists with its logs/ directory.
func TestNewRunNeverSharesADirectory(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	const n = 20
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := NewRun(root, "same", now)
			if err == nil {
				dirs[i] = r.Dir
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, d := range dirs {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if seen[d] {
			t.Fatalf("two runs share %s", d)
		}
		seen[d] = true
		if fi, err := os.Stat(filepath.Join(d, LogsDir)); err != nil || !fi.IsDir() {
			t.Errorf("%s: no logs directory: %v", d, err)
		}
	}
	if target, err := os.Readlink(filepath.Join(root, Latest)); err != nil || !seen[filepath.Join(root, target)] {
		t.Errorf("latest -> %q (%v), not one of the runs", target, err)
	}
	if left, _ := filepath.Glob(filepath.Join(root, Latest+".tmp*")); len(left) > 0 {
		t.Errorf("temporary links left: %v", left)
	}
}

// test.json is the Spec and Found side by side, and reads back whole; the
// test.json of the version before the knob table reads into the same Spec
// (its resources, audit log and image recorded in Found only).
func TestTestInfoJSON(t *testing.T) {
	ti := TestInfo{
		Spec: spec.Spec{Target: "etcd", Workload: "lock-append", Resource: []string{"postgres"}, Fencing: "token", WorkerKnobs: spec.WorkerKnobs{AuditLog: true, Concurrency: 5},
			Image: map[string]string{ImageTarget: "my/etcd:1"}, Nemesis: "pause-holder", TTL: 2 * time.Second, Seed: 9},
		Found: Found{RunID: "0000000a", AuditLogName: "postgres", Resources: []ResourceInfo{{Name: "postgres", Fencing: "token"}},
			Images: map[string]string{ImageTarget: "my/etcd:1"}, Servers: []NodeInfo{{Name: "n1", Addr: "a"}}},
	}
	b, err := json.Marshal(ti)
	if err != nil {
		t.Fatal(err)
	}
	var back TestInfo
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, ti) {
		t.Errorf("%s\n got %+v\nwant %+v", b, back, ti)
	}
	old := `{"run_id":"0000000a","target":"etcd","workload":"lock-append","fencing":"token","audit_log":"postgres",
	"resources":[{"name":"postgres","fencing":"token"}],"images":{"target":"my/etcd:1"},"ttl":"2s","seed":9}`
	var o TestInfo
	if err := json.Unmarshal([]byte(old), &o); err != nil {
		t.Fatal(err)
	}
	if !o.AuditLog || !slices.Equal(o.Resource, []string{"postgres"}) || o.Image[ImageTarget] != "my/etcd:1" || o.TTL != 2*time.Second || o.Seed != 9 {
		t.Errorf("an earlier test.json read as %+v", o.Spec)
	}
}
