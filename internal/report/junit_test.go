package report

import (
	"encoding/xml"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/register"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/belief"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// parsedJUnit is what a CI system reads of junit.xml.
type parsedJUnit struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Name       string `xml:"name,attr"`
		Tests      int    `xml:"tests,attr"`
		Failures   int    `xml:"failures,attr"`
		Errors     int    `xml:"errors,attr"`
		Time       string `xml:"time,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Class   string `xml:"classname,attr"`
			Name    string `xml:"name,attr"`
			Failure *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func junitOf(t *testing.T, test store.TestInfo, res *store.Results) parsedJUnit {
	t.Helper()
	b, err := JUnit(test, res, "/runs/r1/report.html")
	if err != nil {
		t.Fatal(err)
	}
	var j parsedJUnit
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, b)
	}
	if len(j.Suites) != 1 {
		t.Fatalf("%d suites, want 1:\n%s", len(j.Suites), b)
	}
	return j
}

// A run that lost an update fails exactly its invalid checkers, and the
// lost-updates failure names the element and the write that erased it.
func TestJUnitLostUpdate(t *testing.T) {
	const evil = `<b>"&'`
	res := lockappendtest.Check(t, lockappendtest.SeedHistory(t, evil))
	res.Elapsed = "35.4s"
	test := lockappendtest.TestInfo("none", 3)
	test.Nemesis = evil
	test.Started = time.Date(2026, 11, 30, 9, 18, 32, 0, time.UTC)
	j := junitOf(t, test, res)
	s := j.Suites[0]

	invalid := 0
	for _, c := range []checkers.Validity{lockappendtest.Result(res).Checkers.Linearizable.Valid, lockappendtest.Result(res).Checkers.LostUpdates.Valid,
		lockappendtest.Result(res).Checkers.TokenMonotonic.Valid, lockappendtest.Result(res).Checkers.Overlap.Valid, lockappendtest.Result(res).Checkers.Stats.Valid} {
		if c == checkers.Invalid {
			invalid++
		}
	}
	if invalid < 1 || s.Failures != invalid || j.Failures != invalid || s.Errors != 0 || s.Tests != 5 || j.Tests != 5 {
		t.Errorf("tests %d, failures %d, errors %d; want 5 tests, %d failures, 0 errors", s.Tests, s.Failures, s.Errors, invalid)
	}
	if s.Time != "35.400" || s.Name != "test" {
		t.Errorf("suite %q time %q", s.Name, s.Time)
	}
	props := map[string]string{}
	for _, p := range s.Properties {
		props[p.Name] = p.Value
	}
	if props["target"] != "etcd" || props["fencing"] != "none" || props["verdict"] != "invalid" || props["nemesis"] != evil {
		t.Errorf("properties %v", props)
	}
	var lost bool
	for _, c := range s.Cases {
		if c.Class != "fencecheck.etcd.lock-append.none" {
			t.Errorf("case %s: classname %q", c.Name, c.Class)
		}
		if c.Name != "lost-updates" {
			continue
		}
		lost = true
		if c.Failure == nil {
			t.Fatalf("lost-updates did not fail")
		}
		for _, want := range []string{"1 of 2 acknowledged elements lost", "w1's stale write (token 4) erased w2's acknowledged element 2", "report: /runs/r1/report.html"} {
			if !strings.Contains(c.Failure.Text, want) {
				t.Errorf("the failure text lacks %q:\n%s", want, c.Failure.Text)
			}
		}
		if c.Failure.Type != "invalid" || c.Failure.Message == "" {
			t.Errorf("failure type %q message %q", c.Failure.Type, c.Failure.Message)
		}
	}
	if !lost {
		t.Errorf("no lost-updates test case")
	}
}

// A valid run has no failure; interrupted, its verdict is unknown and a
// "verdict" case errors, so that CI does not show green.
func TestJUnitValidAndInterrupted(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Section(0, 1, 4, []int64{}, 0.1, 0.11, 0.2, 5)
	h.Section(1, 2, 7, []int64{1}, 0.15, 0.21, 0.3, 8)
	h.Final(0.5, []int64{1, 2})
	res := lockappendtest.Check(t, h.Sorted())
	if res.Valid() != checkers.Valid {
		t.Fatalf("the history is %s: %s", res.Valid(), lockappendtest.Result(res).Error)
	}
	j := junitOf(t, lockappendtest.TestInfo("token", 2), res)
	if j.Failures != 0 || j.Errors != 0 || j.Tests != 5 {
		t.Errorf("valid run: tests %d, failures %d, errors %d", j.Tests, j.Failures, j.Errors)
	}

	res.SetValid(checkers.Unknown)
	res.Interrupted, res.Note = true, "interrupted before the time limit"
	j = junitOf(t, lockappendtest.TestInfo("token", 2), res)
	s := j.Suites[0]
	last := s.Cases[len(s.Cases)-1]
	if j.Errors != 1 || j.Failures != 0 || last.Name != "verdict" || last.Error == nil || last.Error.Message != res.Note {
		t.Errorf("interrupted run: failures %d, errors %d, last case %+v", j.Failures, j.Errors, last)
	}
}

// The register workload's checkers are cases too.
func TestJUnitRegister(t *testing.T) {
	res := &store.Results{Workload: "register", Result: &register.Result{
		Valid: checkers.Invalid,
		Checkers: register.Checkers{
			Linearizable: checkers.KeyedResult{Verdict: checkers.Verdict{Valid: checkers.Invalid, Message: `not linearizable on key "k1"`}},
			Stats:        register.Stats{Verdict: checkers.Verdict{Valid: checkers.Valid}},
		}}}
	test := lockappendtest.TestInfo("none", 5)
	test.Workload = "register"
	j := junitOf(t, test, res)
	s := j.Suites[0]
	if s.Tests != 2 || s.Failures != 1 || s.Cases[0].Name != "linearizable" || s.Cases[0].Failure == nil ||
		s.Cases[0].Failure.Message != `not linearizable on key "k1"` {
		t.Errorf("register run: %+v", s)
	}
}

// The run's fencecheck, version and revision from test.json, is a
// property of the suite and a row of the report's configuration.
func TestFencecheckRecorded(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Section(0, 1, 4, []int64{}, 0.1, 0.11, 0.2, 5)
	h.Final(0.5, []int64{})
	res := lockappendtest.Check(t, h.Sorted())
	test := lockappendtest.TestInfo("token", 1)
	test.Fencecheck, test.FencecheckRevision = "v1.2.0", "a2d1e3da438c6fcd825e32b23e6255b903f6dcea+modified"
	props := map[string]string{}
	for _, p := range junitOf(t, test, res).Suites[0].Properties {
		props[p.Name] = p.Value
	}
	if props["fencecheck_version"] != test.Fencecheck || props["fencecheck_revision"] != test.FencecheckRevision {
		t.Errorf("properties %v: want the run's fencecheck version and revision", props)
	}
	want := "v1.2.0, revision a2d1e3da438c6fcd825e32b23e6255b903f6dcea+modified"
	if !slices.ContainsFunc(configRows(test), func(c card) bool { return c.Label == "fencecheck" && c.Value == want }) {
		t.Errorf("configuration rows %v: no fencecheck %q", configRows(test), want)
	}
}

// A record that judges the run (the belief check of a --recheck run) is a
// case of its own, named by its key: a failure with its reason when
// invalid, and no "verdict" case besides; a record that says nothing is a
// passing case.
func TestJUnitBeliefRecord(t *testing.T) {
	h := &lockappendtest.Hist{T: t}
	h.Section(0, 1, 4, []int64{}, 0.1, 0.11, 0.2, 5)
	h.Section(1, 2, 7, []int64{1}, 0.15, 0.21, 0.3, 8)
	h.Final(0.5, []int64{1, 2})
	res := lockappendtest.Check(t, h.Sorted())
	res.Records = res.Records.Put(&belief.Belief{Grants: 1, Answers: 4, Stale: 1, MaxNS: 2e9, MedianNS: 2e9, ToleranceNS: 1e8, Workers: 2})
	res.SetValid(checkers.Invalid)
	res.Note = "belief: a lock library said its holder held the lock 2s after the next holder was granted it (tolerance 100ms)"
	j := junitOf(t, lockappendtest.TestInfo("none", 2), res)
	s := j.Suites[0]
	i := slices.IndexFunc(s.Cases, func(c struct {
		Class   string `xml:"classname,attr"`
		Name    string `xml:"name,attr"`
		Failure *struct {
			Type    string `xml:"type,attr"`
			Message string `xml:"message,attr"`
			Text    string `xml:",chardata"`
		} `xml:"failure"`
		Error *struct {
			Type    string `xml:"type,attr"`
			Message string `xml:"message,attr"`
		} `xml:"error"`
	}) bool {
		return c.Name == "belief"
	})
	if i < 0 || s.Cases[i].Failure == nil || !strings.Contains(s.Cases[i].Failure.Message, "2s after the next holder was granted it") {
		t.Fatalf("no failing belief case: %+v", s.Cases)
	}
	if j.Failures != 1 || j.Tests != 6 || s.Cases[len(s.Cases)-1].Name != "belief" {
		t.Errorf("tests %d, failures %d, cases %+v: want the 5 checkers and belief, no verdict case", j.Tests, j.Failures, s.Cases)
	}
	res.Records = record.Set{&belief.Belief{Grants: 1, Answers: 4, ToleranceNS: 1e8, Workers: 2}}
	res.SetValid(checkers.Valid)
	if j := junitOf(t, lockappendtest.TestInfo("none", 2), res); j.Failures != 0 || j.Errors != 0 || j.Tests != 6 {
		t.Errorf("a belief record without a window: tests %d, failures %d, errors %d", j.Tests, j.Failures, j.Errors)
	}
}
