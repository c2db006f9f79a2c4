package cli

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Runs recorded on real clusters must keep the verdicts they had.
// testdata/runs/NAME holds a run's test.json and history.jsonl (gzipped) as
// fencecheck wrote them; `fencecheck check RUN_DIR` re-checks each, and the
// test compares the result with what it works out from the history on its
// own (which acknowledged elements the final read lacks, whether a token was
// granted twice or fell, how many writes the fence refused) and with the
// figures the run had when it was recorded.
var recordedRuns = []struct {
	dir  string
	exit int
	// lock-append: lost elements, fence rejections, token violations.
	lost, rejections int
	reusedTokens     bool
}{
	// etcd 3.6.16, --fencing none --nemesis pause-holder --seed 11: stale
	// writes erase acknowledged elements.
	{dir: "etcd-none-pause-holder", exit: exitInvalid, lost: 4},
	// The same with --fencing token: the stale holders are refused.
	{dir: "etcd-token-pause-holder", exit: exitValid, rejections: 3},
	// Consul 1.14.11, --fencing none --ttl 10s --lock-delay 0, 100 s.
	{dir: "consul-none-pause-holder", exit: exitInvalid, lost: 2},
	// redis-nopersist --fencing token --nemesis kill: the restarted server
	// forgets what was acknowledged before it and counts tokens from 1 again.
	{dir: "redis-nopersist-token-kill", exit: exitInvalid, lost: 55, reusedTokens: true},
	// etcd register workload, serializable reads, partition:leader: a
	// member cut off from the leader serves stale reads.
	{dir: "etcd-register-serializable-partition", exit: exitInvalid},
	// Consul register workload, default reads, partition:leader, 90 s:
	// no stale read.
	{dir: "consul-register-default-partition", exit: exitValid},
	// etcd 3.6.16, --fencing token --nemesis partition:leader
	// --keep-data always: its results.json holds the leaders the servers
	// named and the data it kept, which check carries over (run records:
	// internal/base/record).
	{dir: "etcd-token-partition-leader-kept", exit: exitValid},
	// etcd 3.6.16, --fencing none --nemesis clock-rate:client:x0.2
	// --seed 1 --time-limit 30s: the holder is not stopped, its clocks
	// run at a fifth of true speed, and its lease estimate outlives its
	// lease (recorded for issue 51; history and test.json as the run
	// wrote them).
	{dir: "etcd-none-clock-rate-client", exit: exitInvalid, lost: 1},
	// ZooKeeper 3.8.0, --fencing token --nemesis pause-holder,kill:leader
	// --time-limit 25s --seed 3 (2026-12-07): its tokens are zxids
	// (epoch<<32 | counter), 13 grants in epoch 1 and 53 in epoch 2 after
	// the leader's kill; results.json keeps the leaders it recorded.
	{dir: "zookeeper-token-pause-holder-kill-leader", exit: exitValid, rejections: 1},
}

func TestCheckRecordedRuns(t *testing.T) {
	for _, rr := range recordedRuns {
		t.Run(rr.dir, func(t *testing.T) {
			dir := copyRun(t, filepath.Join("testdata", "runs", rr.dir))
			code, stdout, stderr := runInProcess("check", dir)
			if code != rr.exit {
				t.Fatalf("check exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, rr.exit, stdout, stderr)
			}
			var res struct {
				Workload    string `json:"workload"`
				LostUpdates struct {
					Acknowledged int `json:"acknowledged"`
					Lost         int `json:"lost"`
					Elements     []struct {
						Element       int64 `json:"element"`
						Token         int64 `json:"token"`
						OverwrittenBy *struct {
							Known bool  `json:"known"`
							Token int64 `json:"token"`
						} `json:"overwritten_by"`
					} `json:"elements"`
				} `json:"lost_updates"`
				FenceRejections int `json:"fence_rejections"`
				Checkers        map[string]struct {
					Valid any `json:"valid"`
				} `json:"checkers"`
			}
			readJSONFile(t, filepath.Join(dir, "results.json"), &res)
			if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
				t.Errorf("no report: %v", err)
			}
			checkJUnit(t, dir, code != exitValid)
			if res.Workload == "register" {
				return // the exit code is Porcupine's verdict on the registers
			}

			h := readRecorded(t, filepath.Join(dir, "history.jsonl"))
			var lost []int64
			for _, e := range h.acked {
				if !slices.Contains(h.final, e) {
					lost = append(lost, e)
				}
			}
			var got []int64
			for _, e := range res.LostUpdates.Elements {
				got = append(got, e.Element)
				switch {
				case e.OverwrittenBy == nil || !e.OverwrittenBy.Known:
					t.Errorf("lost element %d: no overwriting write named", e.Element)
				case e.OverwrittenBy.Token == e.Token:
					t.Errorf("lost element %d overwritten under its own grant (token %d)", e.Element, e.Token)
				}
			}
			slices.Sort(lost)
			slices.Sort(got)
			if !slices.Equal(got, lost) || res.LostUpdates.Lost != len(lost) || res.LostUpdates.Acknowledged != len(h.acked) {
				t.Errorf("lost %v (%d of %d), the history says %v of %d", got, res.LostUpdates.Lost, res.LostUpdates.Acknowledged, lost, len(h.acked))
			}
			if len(lost) != rr.lost {
				t.Errorf("the history lost %d elements; when recorded it lost %d", len(lost), rr.lost)
			}
			if res.FenceRejections != h.fenced || h.fenced != rr.rejections {
				t.Errorf("fence rejections %d; the history has %d, the recording had %d", res.FenceRejections, h.fenced, rr.rejections)
			}
			tokensValid := res.Checkers["token-monotonic"].Valid
			if h.reused != rr.reusedTokens || tokensValid != !h.reused {
				t.Errorf("token-monotonic valid %v; tokens reused or falling in the history: %v (recorded: %v)", tokensValid, h.reused, rr.reusedTokens)
			}
		})
	}
}

// recorded is what the test reads from a lock-append history by itself.
type recorded struct {
	acked  []int64 // elements of appends that completed ok
	final  []int64 // the last ok final read
	fenced int     // appends refused by the fence
	// reused is true when a token is granted twice, or a grant's token is
	// not above every token granted before it was invoked.
	reused bool
}

func readRecorded(t *testing.T, path string) recorded {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var h recorded
	invoked := map[any]int64{} // process -> max token granted before its invocation
	var maxToken int64
	seen := map[int64]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e historyLine
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch {
		case e.Type == "invoke" && e.F == "append":
			invoked[e.Process] = maxToken
		case e.Type == "phase" && e.F == "acquired":
			if e.Value.Token <= invoked[e.Process] || seen[e.Value.Token] {
				h.reused = true
			}
			seen[e.Value.Token] = true
			maxToken = max(maxToken, e.Value.Token)
		case e.Type == "ok" && e.F == "append":
			h.acked = append(h.acked, e.Value.Element)
		case e.Type == "fail" && e.F == "append" && e.Value.Reason == "fenced":
			h.fenced++
		case e.Type == "ok" && e.F == "final-read":
			h.final = e.Value.Value
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return h
}

// historyLine is what the tests read of a lock-append history's event,
// on their own, without the harness's decoder.
type historyLine struct {
	Time    int64  `json:"time_ns"`
	Process any    `json:"process"`
	Type    string `json:"type"`
	F       string `json:"f"`
	Value   struct {
		Element int64   `json:"element"`
		Token   int64   `json:"token"`
		Value   []int64 `json:"value"`
		Read    []int64 `json:"read"`
		Reason  string  `json:"reason"`
		Error   string  `json:"error"`
		// A lease check's estimate, and a fault's figures.
		RemainingMS int64 `json:"remaining_ms"`
		Figures     struct {
			Rate float64 `json:"rate"`
		} `json:"figures"`
	} `json:"value"`
}

// copyRun writes a recorded run's test.json and history.jsonl (kept
// gzipped) into a temporary run directory, since check rewrites results and
// report.
func copyRun(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(src, "test.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "test.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), readGzip(t, filepath.Join(src, "history.jsonl.gz")), 0o644); err != nil {
		t.Fatal(err)
	}
	// The stored results, where the run kept them: what check carries
	// over (the run's records) is read from them.
	if b, err := os.ReadFile(filepath.Join(src, "results.json")); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return dir
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checkJUnit checks that the run directory's junit.xml parses and is red
// (a failure or an error) exactly when red says the run is.
func checkJUnit(t *testing.T, dir string, red bool) {
	t.Helper()
	var junit struct {
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Errorf("no junit.xml: %v", err)
		return
	}
	if err := xml.Unmarshal(b, &junit); err != nil {
		t.Errorf("junit.xml: %v", err)
		return
	}
	if got := junit.Failures+junit.Errors > 0; got != red {
		t.Errorf("junit.xml has %d failures and %d errors; want red %v", junit.Failures, junit.Errors, red)
	}
}
