package checkers

import (
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

func TestCheckGrants(t *testing.T) {
	g := func(p history.Process, token, invoked, granted int64) Grant {
		return Grant{Process: p, Token: token, Invoked: invoked, Granted: granted}
	}
	for _, tc := range []struct {
		name   string
		grants []Grant
		valid  Validity
		kinds  []string
	}{
		{name: "no grants", valid: Valid},
		{name: "increasing", grants: []Grant{g(0, 1, 0, 1), g(1, 2, 0, 2), g(2, 3, 0, 3)}, valid: Valid},
		// B invoked before A was granted: either order is fine.
		{name: "concurrent, lower later", grants: []Grant{g(0, 5, 0, 2), g(1, 4, 1, 3)}, valid: Valid},
		// Granted at the same instant B is invoked: not strictly before.
		{name: "touching", grants: []Grant{g(0, 5, 0, 2), g(1, 4, 2, 3)}, valid: Valid},
		{name: "decreasing", grants: []Grant{g(0, 5, 0, 1), g(1, 4, 2, 3)}, valid: Invalid, kinds: []string{NotIncreasing}},
		{name: "duplicate concurrent", grants: []Grant{g(0, 5, 0, 2), g(1, 5, 1, 3)}, valid: Invalid, kinds: []string{Duplicate}},
		{name: "duplicate sequential", grants: []Grant{g(0, 5, 0, 1), g(1, 5, 2, 3)}, valid: Invalid, kinds: []string{Duplicate}},
		{name: "three times", grants: []Grant{g(0, 5, 0, 1), g(1, 5, 2, 3), g(2, 5, 4, 5)}, valid: Invalid, kinds: []string{Duplicate, Duplicate}},
		{
			name:   "one high token, two later lower",
			grants: []Grant{g(0, 9, 0, 1), g(1, 2, 2, 3), g(2, 3, 4, 5), g(3, 10, 6, 7)},
			valid:  Invalid,
			kinds:  []string{NotIncreasing, NotIncreasing},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := checkGrants(tc.grants)
			if r.Valid != tc.valid || r.Grants != len(tc.grants) || r.Count != len(tc.kinds) || len(r.Violations) != len(tc.kinds) {
				t.Fatalf("got %s, %d grants, %d violations %+v; want %s with %v", r.Valid, r.Grants, r.Count, r.Violations, tc.valid, tc.kinds)
			}
			for i, k := range tc.kinds {
				if v := r.Violations[i]; v.Kind != k || v.A.Granted >= v.B.Granted && k == NotIncreasing {
					t.Errorf("violation %d: %+v, want %s", i, v, k)
				}
			}
			if len(tc.grants) == 0 && r.Message == "" {
				t.Errorf("no grants, and no message saying so")
			}
		})
	}
}

func TestCheckGrantsLarge(t *testing.T) {
	const n = 100_000
	grants := make([]Grant, n)
	for i := range grants {
		// Five clients queueing: each invoked 4 grants before its own.
		grants[i] = Grant{Process: history.Process(i % 5), Token: int64(i + 1), Invoked: int64(i-4) * 10, Granted: int64(i) * 10}
	}
	start := cpuTime(t)
	r := checkGrants(grants)
	if r.Valid != Valid || r.Grants != n {
		t.Fatalf("got %s with %d grants: %s", r.Valid, r.Grants, r.Message)
	}
	// A rogue grant with the highest token early on: every later grant is
	// a violation; all are counted, the first MaxViolations listed.
	grants[10].Token = 10 * n
	r = checkGrants(grants)
	if r.Valid != Invalid || r.Count != n-15 || len(r.Violations) != MaxViolations {
		t.Fatalf("got %s, %d violations (%d listed); want %d", r.Valid, r.Count, len(r.Violations), n-15)
	}
	// CPU time (cpuTime): some 80 ms on an idle machine.
	if took := cpuTime(t) - start; took > 2*time.Second && !raceEnabled {
		t.Errorf("100k grants took %s of CPU time", took)
	}
}

func TestLostUpdateOverwriters(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *hist
		lost []int64
		by   []*Overwrite
	}{
		{
			// 3 read [1] and wrote [1,3]; stale 4 (token 2) had read [1]
			// too and wrote [1,4]; 5 built on that.
			name: "overwritten then built on",
			h: newHist(t).Section(0, 1, 1).
				Invoke(1, 4).Acquired(1, 2).Read(1, 1).
				Section(2, 3, 3, 1).
				WriteSent(1).Released(1).Ok(1, 4, 2, 1).
				Section(2, 5, 5, 1, 4).FinalRead(9, 1, 4, 5),
			lost: []int64{3},
			by:   []*Overwrite{{Element: 4, Known: true, Process: 1, Token: 2, Type: history.Ok, Stale: true}},
		},
		{
			// The final list holds an element no append wrote.
			name: "unknown overwriter",
			h:    newHist(t).Section(0, 1, 1).FinalRead(9, 7),
			lost: []int64{1},
			by:   []*Overwrite{{Element: 7}},
		},
		{
			// An info append's delayed write of [1,2] lands after 3's
			// [1,2,3]: the final list is a prefix of the lost write's.
			name: "older write landed last",
			h: newHist(t).Section(0, 1, 1).Invoke(1, 2).Acquired(1, 2).Read(1, 1).Info(1, 2).
				Section(2, 3, 3, 1, 2).FinalRead(9, 1, 2),
			lost: []int64{3},
			by:   []*Overwrite{{Element: 2, Known: true, Process: 1, Token: 2, Type: history.Info, Stale: true}},
		},
		{
			// Empty final list: nothing says who.
			name: "emptied",
			h:    newHist(t).Section(0, 1, 1).Section(1, 2, 2, 1).FinalRead(9),
			lost: []int64{1, 2},
			by:   []*Overwrite{nil, nil},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := parseHist(t, pair(t, tc.h.Events)).LostUpdates()
			if r.Valid != Invalid || r.Lost != len(tc.lost) {
				t.Fatalf("got %s, %+v; want %v lost", r.Valid, r.LostUpdates, tc.lost)
			}
			for i, e := range r.Elements {
				if e.Element != tc.lost[i] {
					t.Errorf("lost[%d] = %d, want %d", i, e.Element, tc.lost[i])
				}
				if i > 0 && e.Acknowledged < r.Elements[i-1].Acknowledged {
					t.Errorf("lost elements not by acknowledgement time: %+v", r.Elements)
				}
				got, want := e.OverwrittenBy, tc.by[i]
				if (got == nil) != (want == nil) || got != nil && *got != *want {
					t.Errorf("element %d overwritten by %+v, want %+v", e.Element, got, want)
				}
			}
		})
	}
}

// A lock without tokens (a user's client program that reports none) has
// nothing to check; a history mixing both checks the grants with tokens.
func TestTokenlessGrants(t *testing.T) {
	none := []Grant{{Process: 1, Invoked: 0, Granted: 1}, {Process: 2, Invoked: 2, Granted: 3}}
	r := checkGrants(none)
	if r.Valid != Valid || r.Count != 0 || !strings.Contains(r.Message, "no token") && !strings.Contains(r.Message, "without tokens") {
		t.Fatalf("tokenless: %+v", r)
	}
	mixed := append(none, Grant{Process: 3, Token: 5, Invoked: 4, Granted: 5}, Grant{Process: 4, Token: 4, Invoked: 6, Granted: 7})
	if r := checkGrants(mixed); r.Valid != Invalid || r.Count != 1 || r.Violations[0].Kind != NotIncreasing {
		t.Fatalf("mixed: %+v", r)
	}
}
