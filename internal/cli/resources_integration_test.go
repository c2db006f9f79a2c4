package cli

// Integration tests of the resources outside the lock service: PostgreSQL
// and the fencing proxy, each fencing mode on etcd and on Redis; crashes of
// the resource; the audit log; the side writer; two resources with
// different fencing. Each runs the real binary against real containers.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// resourceResults is the part of results.json these tests read beyond
// resultsJSON.
type resourceResults struct {
	resultsJSON
	LostUpdates struct {
		Acknowledged int `json:"acknowledged"`
		Lost         int `json:"lost"`
		Elements     []struct {
			Element       int64  `json:"element"`
			Resource      string `json:"resource"`
			SideWriter    bool   `json:"side_writer"`
			OverwrittenBy *struct {
				Process    json.RawMessage `json:"process"`
				SideWriter bool            `json:"side_writer"`
			} `json:"overwritten_by"`
		} `json:"elements"`
	} `json:"lost_updates"`
	PartialUpdates *struct {
		Count int `json:"count"`
	} `json:"partial_updates"`
	AuditLog *struct {
		Entries          int `json:"entries"`
		RefusedButLogged int `json:"refused_but_logged"`
	} `json:"audit_log"`
	Resources map[string]struct {
		Valid           any `json:"valid"`
		FenceRejections int `json:"fence_rejections"`
	} `json:"resources"`
}

func readResourceResults(t *testing.T, dir string) resourceResults {
	t.Helper()
	readResults(t, dir) // junit.xml agrees with the verdict
	var r resourceResults
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResourcesFencingModes(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	// One seed of each mode of each resource, on one target each; the
	// 5-seed tables of both resources on both targets are bench's (README,
	// "Resources outside the lock service").
	cases := []struct{ target, resource, fencing string }{
		{"etcd", "postgres", "none"}, {"etcd", "postgres", "token"}, {"redis", "postgres", "cas"},
		{"redis", "proxy", "none"}, {"etcd", "proxy", "token"},
	}
	for _, c := range cases {
		t.Run(c.target+"-"+c.resource+"-"+c.fencing, func(t *testing.T) {
			t.Parallel()
			res := t.TempDir()
			r := runCLI(t, nil, "run", "--target", c.target, "--resource", c.resource, "--fencing", c.fencing,
				"--nemesis", "pause-holder", "--nemesis-interval", "2s", "--time-limit", "20s", "--results", res, "--seed", "3")
			dir := filepath.Join(res, "latest")
			got := readResourceResults(t, dir)
			want := exitValid
			if c.fencing == "none" {
				want = exitInvalid
			}
			if r.code != want {
				t.Fatalf("exit %d, want %d\n%s", r.code, want, r.stdout)
			}
			if c.fencing == "none" {
				if got.LostUpdates.Lost < 1 {
					t.Errorf("unfenced: lost %d, want >= 1", got.LostUpdates.Lost)
				}
			} else if got.LostUpdates.Lost != 0 || got.FenceRejections < 1 {
				t.Errorf("%s: lost %d, rejections %d; want 0, >= 1", c.fencing, got.LostUpdates.Lost, got.FenceRejections)
			}
			var test struct {
				Resources []struct {
					Name  string `json:"name"`
					Nodes []any  `json:"nodes"`
				} `json:"resources"`
			}
			b, _ := os.ReadFile(filepath.Join(dir, "test.json"))
			if err := json.Unmarshal(b, &test); err != nil || len(test.Resources) != 1 || test.Resources[0].Name != c.resource || len(test.Resources[0].Nodes) == 0 {
				t.Errorf("test.json resources %+v %v", test.Resources, err)
			}
			if c.fencing != "none" {
				// The report tells the refusal in the resource's words.
				report, _ := os.ReadFile(filepath.Join(dir, "report.html"))
				word := map[string]string{"postgres": "PostgreSQL refused the", "proxy": "the proxy refused the"}[c.resource]
				if !strings.Contains(string(report), word) {
					t.Errorf("report.html lacks %q", word)
				}
			}
			assertRunsGone(t, res)
		})
	}
}

// kill:resource crashes PostgreSQL or the durable proxy and restarts it on
// its data: with token fencing no acknowledged update is lost, and pauses
// of holders around the crashes are still fenced.
func TestKillResource(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	for _, resource := range []string{"postgres", "proxy"} {
		t.Run(resource, func(t *testing.T) {
			t.Parallel()
			res := t.TempDir()
			r := runCLI(t, nil, "run", "--target", "redis", "--resource", resource, "--fencing", "token",
				"--nemesis", "kill:resource,pause-holder", "--nemesis-interval", "1s", "--time-limit", "25s", "--results", res, "--seed", "5")
			got := readResourceResults(t, filepath.Join(res, "latest"))
			if r.code != exitValid || got.LostUpdates.Lost != 0 {
				t.Fatalf("exit %d, lost %d; want 0, 0\n%s", r.code, got.LostUpdates.Lost, r.stdout)
			}
			kills := 0
			for _, f := range got.Faults {
				if strings.HasPrefix(f.Fault, "kill:resource") {
					kills++
				}
			}
			if kills == 0 {
				t.Errorf("no kill:resource in %d faults", len(got.Faults))
			}
			assertRunsGone(t, res)
		})
	}
}

// The audit log records writes the fence refused; the run stays valid.
func TestAuditLogRun(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--target", "redis", "--resource", "postgres", "--fencing", "token", "--audit-log",
		"--nemesis", "pause-holder", "--nemesis-interval", "2s", "--time-limit", "20s", "--results", res, "--seed", "2")
	got := readResourceResults(t, filepath.Join(res, "latest"))
	if r.code != exitValid {
		t.Fatalf("exit %d, want 0\n%s", r.code, r.stdout)
	}
	if got.AuditLog == nil || got.AuditLog.RefusedButLogged < 1 || got.AuditLog.Entries < got.LostUpdates.Acknowledged {
		t.Errorf("audit log %+v, acknowledged %d: want refused_but_logged >= 1", got.AuditLog, got.LostUpdates.Acknowledged)
	}
	if !strings.Contains(r.stdout, "audit log") {
		t.Errorf("summary lacks the audit log:\n%s", r.stdout)
	}
	assertRunsGone(t, res)
}

// A side writer that takes no lock and sends no token loses updates even
// with token fencing, and results.json names it in every lost element: as
// the write that erased it, or as the element's own writer, whose batch
// landed inside a holder's critical section and was erased by it.
func TestSideWriterRun(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--target", "redis", "--resource", "postgres", "--fencing", "token", "--side-writer",
		"--nemesis", "none", "--time-limit", "15s", "--results", res, "--seed", "4")
	got := readResourceResults(t, filepath.Join(res, "latest"))
	if r.code != exitInvalid || got.LostUpdates.Lost < 1 {
		t.Fatalf("exit %d, lost %d; want 1, >= 1\n%s", r.code, got.LostUpdates.Lost, r.stdout)
	}
	for _, e := range got.LostUpdates.Elements {
		if !e.SideWriter && (e.OverwrittenBy == nil || !e.OverwrittenBy.SideWriter) {
			t.Errorf("element %d: overwritten by %+v, not the side writer's", e.Element, e.OverwrittenBy)
		}
	}
	// As the eraser ("the side writer's write (no lock, no token)") or as
	// the one erased ("the side writer's acknowledged element N (no lock,
	// no token)").
	if !regexp.MustCompile(`the side writer's (write|acknowledged element \d+) \(no lock, no token\)`).MatchString(r.stdout) {
		t.Errorf("summary does not name the side writer:\n%s", r.stdout)
	}
	assertRunsGone(t, res)
}

// PostgreSQL fenced by token, the proxy unfenced: a stale holder's write is
// refused by one and accepted by the other.
func TestPartialUpdatesRun(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "run", "--target", "etcd", "--resource", "postgres,proxy", "--fencing", "postgres=token,proxy=none",
		"--nemesis", "pause-holder", "--nemesis-interval", "2s", "--time-limit", "20s", "--results", res, "--seed", "6")
	got := readResourceResults(t, filepath.Join(res, "latest"))
	if r.code != exitInvalid {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stdout)
	}
	if got.PartialUpdates == nil || got.PartialUpdates.Count < 1 {
		t.Errorf("partial updates %+v, want >= 1", got.PartialUpdates)
	}
	if pg, px := got.Resources["postgres"], got.Resources["proxy"]; pg.Valid != true || px.Valid != false || pg.FenceRejections < 1 {
		t.Errorf("per resource: postgres %+v, proxy %+v; want postgres valid with rejections, proxy invalid", pg, px)
	}
	for _, e := range got.LostUpdates.Elements {
		if e.Resource != "proxy" {
			t.Errorf("element %d lost in %q, want proxy", e.Element, e.Resource)
		}
	}
	assertRunsGone(t, res)
}
