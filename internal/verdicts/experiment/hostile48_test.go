package experiment

import (
	"errors"
	"strings"
	"testing"
)

// TestDuplicateKeysRefused (issue 48, item 11): a key given twice inside a
// value (a schedule's step, an image mapping) is refused naming its line,
// as a field given twice is; the old code kept the last silently.
func TestDuplicateKeysRefused(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"nemesis: pause-holder,kill\nschedule:\n  - {fault: pause-holder, after: 1s, fault: kill}\n", `x.yaml:3: schedule: "fault" given twice (first on line 3)`},
		{"nemesis: pause-holder,kill\nschedule:\n  - fault: kill\n    after: 1s\n  - fault: pause-holder\n    after: 1s\n    hold: 2s\n    after: 9s\n", `x.yaml:8: schedule: "after" given twice (first on line 6)`},
		{"image: {target: a/b:1, target: c/d:2}\n", "given twice"}, // refused by --image already
		{`{"nemesis": "kill", "schedule": [{"fault": "kill", "after": "1s", "nodes": ["n1"], "nodes": ["n2"]}]}`, `x.yaml:1: schedule: "nodes" given twice`},
	} {
		_, err := Parse([]byte(c.file), "x.yaml", Run)
		if err == nil || !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want ErrFile with %q", c.file, err, c.want)
		}
	}
}

// TestDurationsBounded (issue 48, item 10): every duration a file gives
// stops at a week (spec.MaxDuration): time_limit and lock_delay, as the
// others, and a schedule step's after and hold (the old code took
// 2562047h for all four).
func TestDurationsBounded(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"time_limit: 2562047h\n", "x.yaml:1: time_limit"},
		{"lock_delay: 2562047h\n", "x.yaml:1: lock_delay"},
		{"time_limit: 169h\n", "at most 168h"},
		{"nemesis: kill\nschedule:\n  - {fault: kill, after: 2562047h}\n", "x.yaml:3: schedule: step 1"},
		{"nemesis: kill\nschedule:\n  - {fault: kill, after: 1s, hold: 2562047h}\n", "at most 168h"},
	} {
		_, err := Parse([]byte(c.file), "x.yaml", Run)
		if err == nil || !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want ErrFile with %q", c.file, err, c.want)
		}
	}
	for _, ok := range []string{"time_limit: 168h\nlock_delay: 168h\n", "nemesis: kill\nschedule:\n  - {fault: kill, after: 168h, hold: 168h}\n"} {
		if _, err := Parse([]byte(ok), "x.yaml", Run); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
