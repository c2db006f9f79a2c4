// Package shrink shrinks a failing run (fencecheck shrink): it searches
// for the smallest run that still fails as a stored failing run did:
// fewer faults of its recorded schedule, fewer clients, a shorter time
// limit, fewer nodes, shorter holds. Runs are not deterministic, so a
// smaller candidate is kept only when it fails in at least K of N runs
// (Confirm); a budget of runs, and a deadline, bound the search, and the
// best candidate found so far is kept when it ends early.
//
// The search (Search) knows nothing of containers: a Runner runs a
// candidate and says whether it failed. Run is the whole shrink of a
// stored run: it runs each candidate with harness.Run, as a rerun of the
// stored run with the candidate's knobs and replayed schedule, and
// writes the smallest failing run it confirmed, with repro.md.
package shrink

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
)

// Candidate is a run to try: a stored run's configuration with these
// knobs changed.
type Candidate struct {
	// Steps is the fault schedule to replay, a subsequence of the stored
	// run's recorded schedule (holds perhaps shortened).
	Steps []nemesis.Step
	// Clients is --concurrency, Nodes --nodes, TimeLimit --time-limit.
	Clients   int
	Nodes     int
	TimeLimit time.Duration
	// Of are the indexes, in the stored run's schedule, of Steps: Of[i]
	// is the stored step Steps[i] replays.
	Of []int
}

// String is the candidate in a few words: "1 fault, 2 clients, 1 node,
// time limit 12s".
func (c Candidate) String() string {
	return fmt.Sprintf("%s, %s, %s, time limit %s", count(len(c.Steps), "fault"), count(c.Clients, "client"), count(c.Nodes, "node"), c.TimeLimit)
}

// count is "1 fault", "3 faults".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// clone is c with its own slices.
func (c Candidate) clone() Candidate {
	c.Steps, c.Of = slices.Clone(c.Steps), slices.Clone(c.Of)
	return c
}

// Outcome is one run of a candidate.
type Outcome struct {
	// Failed says the run failed as the stored run did (the Runner's
	// rule: the same checker with the same verdict).
	Failed bool `json:"failed"`
	// FirstLoss is when the run first lost an update (since its start); 0
	// when it lost none, or the workload does not tell.
	FirstLoss time.Duration `json:"first_loss_ns,omitempty"`
	// Dir is the run's directory ("" when the harness failed before
	// making one); Verdict a word for the progress line ("invalid
	// (lost-updates)", "valid", "error: ...").
	Dir     string `json:"dir,omitempty"`
	Verdict string `json:"verdict"`
}

// Runner runs a candidate once. An error is a run that did not fail (a
// harness failure, a configuration the target refuses): the search goes
// on with the next candidate; ctx's cancellation ends the search.
type Runner interface {
	Run(ctx context.Context, c Candidate) (Outcome, error)
}

// Confirm is the acceptance rule: a candidate is kept when at least K of
// N runs fail.
type Confirm struct{ K, N int }

// ParseConfirm reads "K/N" (1 <= K <= N <= 20).
func ParseConfirm(s string) (Confirm, error) {
	var c Confirm
	if _, err := fmt.Sscanf(s, "%d/%d", &c.K, &c.N); err != nil || fmt.Sprintf("%d/%d", c.K, c.N) != strings.TrimSpace(s) {
		return Confirm{}, fmt.Errorf("%q: want K/N, as 2/3", s)
	}
	if c.K < 1 || c.N < c.K || c.N > 20 {
		return Confirm{}, fmt.Errorf("%q: want 1 <= K <= N <= 20", s)
	}
	return c, nil
}

func (c Confirm) String() string { return fmt.Sprintf("%d/%d", c.K, c.N) }

// Options bound and steer the search.
type Options struct {
	Confirm Confirm
	// Budget is the most runs the search makes (0: no bound but the
	// Deadline's); Deadline, if not zero, when it starts no further run.
	Budget   int
	Deadline time.Time
	// MinClients is the fewest clients tried (2 if 0).
	MinClients int
	// MinNodes is the fewest nodes the target allows (0: fewer nodes are
	// not tried). Fewer nodes are tried only when every fault of the
	// candidate is aimed at a role (the holder, the leader), never at a
	// node by name.
	MinNodes int
	// Blamed are the indexes of the stored schedule's steps the run's
	// stories blame for its losses (Blamed): tried alone first.
	Blamed []int
	// FirstLoss is when the stored run first lost an update (0: unknown;
	// the time limit is then shortened only from the candidates' runs).
	FirstLoss time.Duration
	// Progress, if not nil, receives a line for each run and each
	// decision.
	Progress func(format string, args ...any)
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// Trial is one candidate tried: which reduction, its runs, and whether it
// was kept.
type Trial struct {
	Phase     string    `json:"phase"`
	Candidate Candidate `json:"-"`
	Summary   string    `json:"candidate"`
	Runs      []Outcome `json:"runs"`
	Kept      bool      `json:"kept"`
	// Unfinished: the budget, the deadline or Ctrl-C ended its runs
	// before they decided.
	Unfinished bool `json:"unfinished,omitempty"`
}

// Result is what the search found.
type Result struct {
	// Best is the smallest candidate kept: Start when none was.
	Best Candidate
	// BestRuns are Best's confirming runs (nil when Best is Start: the
	// stored run itself is its evidence).
	BestRuns []Outcome
	Trials   []Trial
	// Runs counts the runs made.
	Runs int
	// Stopped says why the search ended: "done" (every reduction tried),
	// "budget", "deadline" or "interrupted".
	Stopped string
}

// Phases of the search, in order: the names Trial.Phase takes.
const (
	PhaseFaults    = "faults"
	PhaseClients   = "clients"
	PhaseTimeLimit = "time-limit"
	PhaseNodes     = "nodes"
	PhaseHold      = "hold"
)

// search is one search's state.
type search struct {
	ctx     context.Context
	r       Runner
	o       Options
	res     Result
	stopped string
}

// Search looks for a smaller candidate than start that still fails, with
// the reductions in this order: faults dropped from the schedule (each
// blamed fault alone first, then halves, quarters ... of the schedule,
// the unblamed before the blamed, the later before the earlier); fewer
// clients (MinClients first, up to one fewer than now); a shorter time
// limit (a little past the latest first loss of the best candidate's
// runs, else halfway there); fewer nodes (MinNodes, when allowed); then
// each remaining fault's hold halved while that still fails, else cut
// by a quarter once. A candidate is kept only when Confirm.K of its runs
// fail; its runs stop as soon as that is decided (K failed, or too many
// passed for K to be reached). Every run counts against the budget; a
// candidate whose runs the budget, the deadline or ctx cut short is not
// kept, and the search ends there with the best so far. Search never
// fails: ctx's end is Stopped "interrupted".
func Search(ctx context.Context, r Runner, start Candidate, o Options) Result {
	if o.MinClients == 0 {
		o.MinClients = 2
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	if len(start.Of) != len(start.Steps) {
		start.Of = make([]int, len(start.Steps))
		for i := range start.Of {
			start.Of[i] = i
		}
	}
	s := &search{ctx: ctx, r: r, o: o}
	s.res.Best = start.clone()
	for _, phase := range []func(){s.faults, s.clients, s.timeLimit, s.nodes, s.holds} {
		if s.stopped != "" {
			break
		}
		phase()
	}
	s.res.Stopped = s.stopped
	if s.res.Stopped == "" {
		s.res.Stopped = "done"
	}
	return s.res
}

// try runs c until the rule decides, records the trial, and keeps c as
// the best when it failed often enough. It returns whether c was kept.
func (s *search) try(phase string, c Candidate) bool {
	if s.stopped != "" {
		return false
	}
	t := Trial{Phase: phase, Candidate: c, Summary: c.String()}
	k, n := s.o.Confirm.K, s.o.Confirm.N
	failed, passed := 0, 0
	s.o.Progress("shrink: trying %s (%s)", c, phase)
	for failed < k && passed <= n-k {
		switch {
		case s.ctx.Err() != nil:
			s.stopped = "interrupted"
		case s.o.Budget > 0 && s.res.Runs >= s.o.Budget:
			s.stopped = "budget"
		case !s.o.Deadline.IsZero() && !s.o.Now().Before(s.o.Deadline):
			s.stopped = "deadline"
		}
		if s.stopped != "" {
			t.Unfinished = true
			break
		}
		s.res.Runs++
		out, err := s.r.Run(s.ctx, c)
		if err != nil {
			if s.ctx.Err() != nil {
				s.res.Runs--
				continue // the loop's check says interrupted
			}
			out = Outcome{Verdict: "error: " + err.Error()}
		}
		t.Runs = append(t.Runs, out)
		if out.Failed {
			failed++
		} else {
			passed++
		}
		s.o.Progress("shrink: run %d%s: %s, %d of %d failed so far (need %s) %s", s.res.Runs, s.bound(), out.Verdict, failed, len(t.Runs), s.o.Confirm, out.Dir)
	}
	t.Kept = !t.Unfinished && failed >= k
	s.res.Trials = append(s.res.Trials, t)
	if t.Kept {
		s.res.Best, s.res.BestRuns = c.clone(), t.Runs
		s.o.Progress("shrink: kept: %s", c)
	} else if !t.Unfinished {
		s.o.Progress("shrink: not kept (%d of %d failed)", failed, len(t.Runs))
	}
	return t.Kept
}

// bound is the budget in words for a progress line: " of at most 40",
// " (until 15:04:05)".
func (s *search) bound() string {
	if s.o.Budget > 0 {
		return fmt.Sprintf(" of at most %d", s.o.Budget)
	}
	if !s.o.Deadline.IsZero() {
		return " (until " + s.o.Deadline.Format("15:04:05") + ")"
	}
	return ""
}

// faults drops faults from the schedule.
func (s *search) faults() {
	best := s.res.Best
	if len(best.Steps) <= 1 {
		return
	}
	blamed := map[int]bool{}
	for _, b := range s.o.Blamed {
		blamed[b] = true
	}
	// Each blamed fault alone.
	for i, of := range best.Of {
		if blamed[of] && s.try(PhaseFaults, keep(best, []int{i})) {
			return
		}
	}
	// Then chunks of the schedule dropped, the largest first: the
	// unblamed steps before the blamed ones, the later before the
	// earlier.
	for size := len(s.res.Best.Steps) / 2; size >= 1 && s.stopped == ""; {
		cur := s.res.Best
		order := dropOrder(cur, blamed)
		dropped := false
		for start := 0; start < len(order) && len(cur.Steps) > 1; start += size {
			drop := order[start:min(start+size, len(order))]
			if len(drop) >= len(cur.Steps) {
				continue
			}
			var rest []int
			for i := range cur.Steps {
				if !slices.Contains(drop, i) {
					rest = append(rest, i)
				}
			}
			if s.try(PhaseFaults, keep(cur, rest)) {
				dropped = true
				break
			}
		}
		switch {
		case len(s.res.Best.Steps) <= 1:
			return
		case dropped:
			size = min(size, len(s.res.Best.Steps)/2)
			if size == 0 {
				return
			}
		default:
			size /= 2
		}
	}
}

// dropOrder are c's step positions in the order they are tried for
// dropping: the unblamed before the blamed, each the later first.
func dropOrder(c Candidate, blamed map[int]bool) []int {
	var un, bl []int
	for i := len(c.Steps) - 1; i >= 0; i-- {
		if blamed[c.Of[i]] {
			bl = append(bl, i)
		} else {
			un = append(un, i)
		}
	}
	return append(un, bl...)
}

// keep is c with only the steps at positions idx (in order).
func keep(c Candidate, idx []int) Candidate {
	n := c
	n.Steps, n.Of = nil, nil
	for _, i := range idx {
		n.Steps = append(n.Steps, c.Steps[i])
		n.Of = append(n.Of, c.Of[i])
	}
	return n
}

// clients tries MinClients, MinClients+1, ... up to one fewer than now:
// the first that fails is kept.
func (s *search) clients() {
	for n := s.o.MinClients; n < s.res.Best.Clients; n++ {
		c := s.res.Best.clone()
		c.Clients = n
		if s.try(PhaseClients, c) || s.stopped != "" {
			return
		}
	}
}

// timeLimit tries a time limit a little past the best candidate's first
// loss (the latest of its runs', else the stored run's): that plus a
// quarter and at least 2 s, whole seconds, and no earlier than the end of
// the schedule's last fault; if that does not fail often enough, halfway
// between it and now.
func (s *search) timeLimit() {
	first := s.o.FirstLoss
	if s.res.BestRuns != nil {
		first = 0
		for _, o := range s.res.BestRuns {
			if o.Failed {
				first = max(first, o.FirstLoss)
			}
		}
	}
	if first <= 0 {
		return
	}
	cur := s.res.Best.TimeLimit
	want := (first + max(2*time.Second, first/4)).Round(time.Second)
	if want < first {
		want += time.Second
	}
	want = max(want, scheduleEnd(s.res.Best.Steps)+time.Second)
	for _, tl := range []time.Duration{want, ((want + cur) / 2).Round(time.Second)} {
		if tl >= s.res.Best.TimeLimit {
			return
		}
		c := s.res.Best.clone()
		c.TimeLimit = tl
		if s.try(PhaseTimeLimit, c) || s.stopped != "" {
			return
		}
	}
}

// scheduleEnd is when steps' last fault ends, from the start, as far as
// the schedule says (a step's own injection takes more).
func scheduleEnd(steps []nemesis.Step) time.Duration {
	var end time.Duration
	for _, st := range steps {
		end += st.After + st.Hold
	}
	return end
}

// nodes tries MinNodes when the target allows fewer nodes and no fault
// of the candidate names a node.
func (s *search) nodes() {
	b := s.res.Best
	if s.o.MinNodes <= 0 || s.o.MinNodes >= b.Nodes {
		return
	}
	for _, st := range b.Steps {
		if st.Role == "" {
			return
		}
	}
	c := b.clone()
	c.Nodes = s.o.MinNodes
	s.try(PhaseNodes, c)
}

// holds shortens each remaining fault's hold: halved while that fails
// (at most three times), else by a quarter once. A hold the history does
// not give (0: drawn by the fault) is left.
func (s *search) holds() {
	for i := range s.res.Best.Steps {
		for range 3 {
			h := s.res.Best.Steps[i].Hold
			if h <= 0 || s.stopped != "" {
				break
			}
			c := s.res.Best.clone()
			c.Steps[i].Hold = (h / 2).Round(time.Millisecond)
			if s.try(PhaseHold, c) {
				continue
			}
			if s.stopped == "" {
				c.Steps[i].Hold = (h * 3 / 4).Round(time.Millisecond)
				s.try(PhaseHold, c)
			}
			break
		}
	}
}
