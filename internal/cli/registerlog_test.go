package cli

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTwoProcessRegisterLog writes a Jepsen cas-register history of n
// operations as jepsen.util log lines, as two Jepsen workers would record
// it against one register: each worker invokes an operation, which takes
// effect at some later step and completes at a later one, the steps of the
// two interleaved at random, so that their operations overlap. Half the
// operations are reads, 3 in 10 writes and 2 in 10 cas (from the current
// value 2 times in 3, so most succeed); every write and cas writes a value
// of its own. One write or cas in a thousand times out (:info; half of
// those took effect, half never) and its worker gets a new process, as in
// Jepsen. The history is linearizable by construction, except that with
// stale, of the three operations planted at 9/10 of the log when both
// workers are idle (a write of a, a write of b, a read), the read returns
// a instead of b: no order explains that.
func writeTwoProcessRegisterLog(t *testing.T, path string, n int, stale bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	line := func(p int, typ, fn, v string) {
		fmt.Fprintf(w, "INFO  jepsen.util - %d\t:%s\t:%s\t%s\n", p, typ, fn, v)
	}
	type op struct {
		fn       string
		arg      string // the invocation's value
		v, old   int64
		inFlight bool
		applied  bool
		timeout  bool // completes :info
		never    bool // a timeout that took no effect
		ok       bool // a cas that succeeded
		read     string
	}
	var state int64
	present := false
	fresh := int64(0)
	procs := [2]int{0, 1}
	var ops [2]op
	value := func() int64 { fresh++; return fresh }
	apply := func(o *op) {
		o.applied = true
		switch {
		case o.fn == "read" && present:
			o.read = fmt.Sprint(state)
		case o.fn == "read":
			o.read = "nil"
		case o.never:
		case o.fn == "write":
			state, present = o.v, true
		case o.fn == "cas":
			if o.ok = present && state == o.old; o.ok {
				state = o.v
			}
		}
	}
	complete := func(i int) {
		o := &ops[i]
		p := procs[i]
		switch {
		case o.timeout:
			line(p, "info", o.fn, ":timed-out")
			procs[i] += 2 // Jepsen's next process for this worker
		case o.fn == "read":
			line(p, "ok", "read", o.read)
		case o.fn == "cas" && !o.ok:
			line(p, "fail", "cas", o.arg)
		default:
			line(p, "ok", o.fn, o.arg)
		}
		*o = op{}
	}
	plantAt := n / 10 * 9
	for invoked := 0; invoked < n || ops[0].inFlight || ops[1].inFlight; {
		idle := !ops[0].inFlight && !ops[1].inFlight
		if invoked == plantAt && idle {
			a, b := value(), value()
			p := procs[0]
			line(p, "invoke", "write", fmt.Sprint(a))
			line(p, "ok", "write", fmt.Sprint(a))
			line(p, "invoke", "write", fmt.Sprint(b))
			line(p, "ok", "write", fmt.Sprint(b))
			line(p, "invoke", "read", "nil")
			if stale {
				line(p, "ok", "read", fmt.Sprint(a))
			} else {
				line(p, "ok", "read", fmt.Sprint(b))
			}
			state, present = b, true
			invoked += 3
			continue
		}
		i := rng.IntN(2)
		o := &ops[i]
		switch {
		case !o.inFlight && invoked < n && invoked != plantAt: // at plantAt, drain
			*o = op{inFlight: true}
			switch r := rng.IntN(10); {
			case r < 5:
				o.fn, o.arg = "read", "nil"
			case r < 8:
				o.fn, o.v = "write", value()
				o.arg = fmt.Sprint(o.v)
			default:
				o.fn, o.v, o.old = "cas", value(), state
				if rng.IntN(3) == 0 {
					o.old = -o.v // never the value: it fails
				}
				o.arg = fmt.Sprintf("[%d %d]", o.old, o.v)
			}
			if o.fn != "read" && rng.IntN(1000) == 0 {
				o.timeout, o.never = true, rng.IntN(2) == 0
			}
			line(procs[i], "invoke", o.fn, o.arg)
			invoked++
		case !o.inFlight:
		case !o.applied:
			apply(o)
		default:
			complete(i)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// The case: a 1.2M-operation two-process register log gets a
// verdict, valid, and invalid with one stale read planted, from the frontier
// search (Porcupine's search on it would need hundreds of gigabytes: it
// ended unknown at a 5.7 GB peak), with the default memory budget, the
// peak resident size of the child under 1 GiB (runHostile kills it past
// that) and its CPU time under a minute; the invalid verdict names the
// stale read's lines.
func TestJepsenRegisterLog1_2MTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("1.2M-operation histories: skipped under -short")
	}
	const n = 1_200_000
	dir := t.TempDir()
	for _, c := range []struct {
		stale bool
		code  int
		want  string
	}{
		{false, exitValid, "valid  "},
		{true, exitInvalid, "invalid  "},
	} {
		path := filepath.Join(dir, fmt.Sprintf("register-2p-stale-%v.log", c.stale))
		writeTwoProcessRegisterLog(t, path, n, c.stale)
		r := runHostile(t, 10*time.Minute, "check", "--check-timeout", "10m", "--jepsen-history", path, "--model", "cas-register")
		if r.code != c.code || !strings.HasPrefix(r.stdout, c.want+path) || !strings.Contains(r.stdout, "  method           frontier search\n") {
			t.Errorf("stale %v: exit %d, want %d, judged by the frontier search\n%s%s", c.stale, r.code, c.code, r.stdout, r.stderr)
		}
		if c.stale && !strings.Contains(r.stdout, "none explains the operations up to the return of process ") {
			t.Errorf("the invalid verdict does not name the stale read:\n%s", r.stdout)
		}
		if want := fmt.Sprintf("  operations       %d: ", n); !strings.Contains(r.stdout, want) {
			t.Errorf("want %q in\n%s", want, r.stdout)
		}
		if r.maxRSS > 1<<30 {
			t.Errorf("stale %v: peak resident size %d MiB, over 1 GiB", c.stale, r.maxRSS>>20)
		}
		if r.cpu > time.Minute {
			t.Errorf("stale %v: %s of CPU time", c.stale, r.cpu)
		}
		t.Logf("stale %v: peak resident size %d MiB, %s of CPU time", c.stale, r.maxRSS>>20, r.cpu.Round(time.Millisecond))
	}
}
