package report

import (
	"os"
	"path/filepath"
	"testing"
)

// TestIndexReadsAnyWorkload: the index reads results.json as the store
// does, and its figures from the result's neutral summary: an election
// run's entries, a register run's verdict without figures, and a "valid"
// that does not read is an error shown as unknown.
func TestIndexReadsAnyWorkload(t *testing.T) {
	dir := t.TempDir()
	runs := map[string]string{
		"election": `{"valid":false,"checkers":{"stats":{"valid":true,"ok":3,"fail":1,"info":0}},"lost_updates":{"acknowledged":9,"lost":2,"elements":[]},"fence_rejections":4,"workload":"election","faults":[],"events":10,"check_time":"1ms"}`,
		"register": `{"valid":true,"checkers":{"stats":{"valid":true,"ok":5,"fail":0,"info":0}},"workload":"register","faults":[],"events":10,"check_time":"1ms"}`,
		"bad":      `{"valid":42,"workload":"lock-append","faults":[]}`,
	}
	for name, res := range runs {
		d := filepath.Join(dir, name, "20261201T000000.000Z")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "results.json"), []byte(res), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	got := map[string]RunSummary{}
	for name := range runs {
		got[name] = summarize(root, name+"/20261201T000000.000Z", name, "20261201T000000.000Z")
	}
	if e := got["election"]; e.Verdict != "invalid" || e.Workload != "election" || e.Acknowledged != 9 || e.Lost != 2 || e.FenceRejections != 4 || e.Err != "" {
		t.Errorf("election: %+v", e)
	}
	if r := got["register"]; r.Verdict != "valid" || r.Acknowledged != 0 || r.Lost != 0 || r.Err != "" {
		t.Errorf("register: %+v", r)
	}
	if b := got["bad"]; b.Verdict != "unknown" || b.Err == "" {
		t.Errorf("bad valid: %+v", b)
	}
}
