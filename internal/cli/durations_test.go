package cli

import "testing"

// TestDurationsBoundedOnTheCommandLine (issue 48, item 10): --time-limit
// and --lock-delay stop at a week, as every other duration does (they took
// 2562047h).
func TestDurationsBoundedOnTheCommandLine(t *testing.T) {
	for _, flag := range []string{"--time-limit", "--lock-delay"} {
		r := runHostile(t, hangLimit, "run", "--target", "consul", flag, "2562047h", "--results", t.TempDir())
		r.expect(t, exitBadArgs, hangLimit, flag, "at most 168h")
	}
}
