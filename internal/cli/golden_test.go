package cli

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/campaigns/zoo"
	"github.com/fencecheck/fencecheck/internal/report"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/runs/*/golden/ from what check writes now")

// goldenFiles are the files check writes for a stored run whose bytes must
// not change when the code is reorganised: a refactor that renders a stored
// run differently changed what users read. The run directory and the time
// the check took are the only parts that vary from one check to the next,
// and normalise() masks them, with the key a failed register check names
// (see firstKey) and the checking binary's version (checkedBy).
var goldenFiles = []string{"report.html", "results.json", "junit.xml"}

var (
	checkedIn = regexp.MustCompile(`(checked in</div><div class="v">|checked in |"check_time": "|&#34;check_time&#34;: &#34;)[0-9.]+(ns|µs|ms|s)`)
	// The register checker checks keys in parallel and stops at the first
	// that fails: which one it names, and how many it had checked, vary.
	firstKey  = regexp.MustCompile(`(on key (?:\\)?(?:"|&#34;))k[0-9]+((?:\\)?(?:"|&#34;) explains what they returned; )[0-9]+( of [0-9]+ keys checked)`)
	failKey   = regexp.MustCompile(`((?:"|&#34;)failing_key(?:"|&#34;): (?:"|&#34;))k[0-9]+`)
	checked   = regexp.MustCompile(`((?:"|&#34;)keys_checked(?:"|&#34;): )[0-9]+`)
	elapsed   = regexp.MustCompile(`("|&#34;)elapsed_ns("|&#34;): [0-9]+`)
	junitTime = regexp.MustCompile(`time="[0-9.]+"`)
	// Porcupine's visualization shows the failing key the register check
	// names, which varies (see firstKey): so does the file's size.
	vizSize = regexp.MustCompile(`(linearizability\.html</a> <span class="muted">)[0-9.]+ [KMG]?B`)
	// results.json's checked_by names the binary that checked (this
	// test's, a different revision with every commit); the version that
	// recorded the run is test.json's and is not masked.
	checkedBy = regexp.MustCompile(`((?:"|&#34;)checked_by(?:"|&#34;): (?:"|&#34;))[^"&]*`)
)

func normalise(b []byte, dir string) []byte {
	b = bytes.ReplaceAll(b, []byte(dir), []byte("RUN_DIR"))
	b = checkedIn.ReplaceAll(b, []byte("${1}CHECK_TIME"))
	b = elapsed.ReplaceAll(b, []byte(`${1}elapsed_ns${2}: ELAPSED`))
	b = firstKey.ReplaceAll(b, []byte(`${1}KEY${2}N${3}`))
	b = failKey.ReplaceAll(b, []byte(`${1}KEY`))
	b = checked.ReplaceAll(b, []byte(`${1}N`))
	b = checkedBy.ReplaceAll(b, []byte(`${1}FENCECHECK`))
	b = vizSize.ReplaceAll(b, []byte("${1}SIZE"))
	return junitTime.ReplaceAll(b, []byte(`time="TIME"`))
}

// Every stored run of testdata/runs checks to byte-identical files: its
// report, results.json and JUnit file are the ones recorded in its golden/
// folder (gzipped), but for the run's directory and the check's duration.
// `go test ./internal/cli -run TestRecordedRunsRenderAsBefore -update-golden`
// rewrites them, for a change meant to alter what a report shows.
func TestRecordedRunsRenderAsBefore(t *testing.T) {
	for _, rr := range recordedRuns {
		t.Run(rr.dir, func(t *testing.T) {
			src := filepath.Join("testdata", "runs", rr.dir)
			dir := copyRun(t, src)
			// No memory budget: the check runs in the test's process,
			// whose memory other tests share (a 1M-operation history
			// built beside it tripped the default budget of a quarter of
			// the machine, and the report said so).
			if code, _, stderr := runInProcess("check", dir, "--check-memory", "0"); code != rr.exit {
				t.Fatalf("check exit %d, want %d: %s", code, rr.exit, stderr)
			}
			for _, name := range goldenFiles {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if os.IsNotExist(err) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				got := normalise(b, dir)
				gold := filepath.Join(src, "golden", name+".gz")
				if *updateGolden {
					writeGzip(t, gold, got)
					continue
				}
				want := readGzip(t, gold)
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from %s: %s\n(run with -update-golden if the change is meant to alter it)", name, gold, firstDifference(want, got))
				}
			}
		})
	}
}

// firstDifference shows where got first departs from want: the line, and
// the bytes around the first that differs.
func firstDifference(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	line := bytes.Count(want[:i], []byte("\n")) + 1
	around := func(b []byte) string { return string(b[max(i-80, 0):min(i+80, len(b))]) }
	return fmt.Sprintf("line %d, byte %d:\n  want …%q…\n  got  …%q…", line, i, around(want), around(got))
}

func readGzip(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (run with -update-golden to record it)", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeGzip(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Header.ModTime = zw.Header.ModTime.UTC() // zero: the file's bytes do not depend on when it was written
	zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// check reads a run directory whose history is kept gzipped
// (history.jsonl.gz, as testdata/runs keeps them): the stored run checks
// to the verdict and the results.json of its golden folder, as the same
// run with its history uncompressed does, and its report links the
// gzipped history.
func TestCheckGzippedHistory(t *testing.T) {
	rr := recordedRuns[1] // etcd-token-pause-holder
	src := filepath.Join("testdata", "runs", rr.dir)
	dir := t.TempDir()
	for _, name := range []string{"test.json", "history.jsonl.gz"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runInProcess("check", dir, "--check-memory", "0")
	if code != rr.exit {
		t.Fatalf("check exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, rr.exit, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := normalise(b, dir), readGzip(t, filepath.Join(src, "golden", "results.json.gz")); !bytes.Equal(got, want) {
		t.Errorf("results.json differs from the golden one: %s", firstDifference(want, got))
	}
	if _, err := os.Stat(filepath.Join(dir, "history.jsonl")); err == nil {
		t.Error("check wrote an uncompressed history beside the gzipped one")
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`<a href="history.jsonl.gz">history.jsonl.gz</a>`)) {
		t.Error("the report does not link history.jsonl.gz")
	}
}

// A stored run's report streams its history (zoo.WriteReport: the views
// read it event by event, report.Input.EachEvent) and is, byte for byte,
// the report of the same run with its history held (as a run writes it):
// each recorded run, every workload's view and the generic one.
func TestStreamedReportIsTheHeldOne(t *testing.T) {
	for _, rr := range recordedRuns {
		t.Run(rr.dir, func(t *testing.T) {
			dir := copyRun(t, filepath.Join("testdata", "runs", rr.dir))
			if code, _, stderr := runInProcess("check", dir, "--check-memory", "0"); code != rr.exit {
				t.Fatalf("check exit %d, want %d: %s", code, rr.exit, stderr)
			}
			in, err := zoo.StoredReportInput(dir, dir)
			if err != nil {
				t.Fatal(err)
			}
			var streamed, held bytes.Buffer
			if err := report.Render(&streamed, in); err != nil {
				t.Fatal(err)
			}
			if in.Events, err = history.ReadFile(in.HistoryPath); err != nil {
				t.Fatal(err)
			}
			in.HistoryPath = ""
			if err := report.Render(&held, in); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(streamed.Bytes(), held.Bytes()) {
				a, b := streamed.String(), held.String()
				i := 0
				for i < min(len(a), len(b)) && a[i] == b[i] {
					i++
				}
				t.Fatalf("the streamed report differs from the held one at byte %d of %d:\nstreamed: %q\nheld:     %q",
					i, len(a), a[max(0, i-80):min(len(a), i+120)], b[max(0, i-80):min(len(b), i+120)])
			}
			if !strings.Contains(streamed.String(), `id="tl-main"`) {
				t.Errorf("the report has no timeline")
			}
		})
	}
}
