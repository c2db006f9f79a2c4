package sweep

import (
	"fmt"
	"io"
	"time"
)

// WriteTable prints the sweep as a table: one line per point (series by
// series), then each unfenced series' threshold, expected and measured.
func (s *Summary) WriteTable(w io.Writer) {
	ttl := time.Duration(s.TTLMS) * time.Millisecond
	fmt.Fprintf(w, "%s: holder paused M TTLs (TTL %s, lease %s, work %s), %d run(s) a point\n",
		s.Target, ttl, time.Duration(s.LeaseMS)*time.Millisecond, time.Duration(s.WorkMS)*time.Millisecond, s.Runs)
	fmt.Fprintf(w, "%-8s %-8s %-8s %-10s %-11s %-13s %-7s %s\n", "margin", "fencing", "pause M", "pause", "lossy runs", "lost/acked", "fenced", "not measured")
	for _, series := range s.Series() {
		for _, p := range series {
			margin := Format(float64(p.MarginMS) / float64(s.TTLMS))
			other := ""
			if p.Missed > 0 {
				other += fmt.Sprintf("%d missed ", p.Missed)
			}
			if p.Errors > 0 {
				other += fmt.Sprintf("%d error ", p.Errors)
			}
			if p.Unknown > 0 {
				other += fmt.Sprintf("(%d unknown) ", p.Unknown)
			}
			fmt.Fprintf(w, "%-8s %-8s %-8s %-10s %-11s %-13s %-7d %s\n", margin, p.Fencing, Format(p.Pause),
				(time.Duration(p.PauseMS) * time.Millisecond).String(), fmt.Sprintf("%d/%d", p.Lossy, p.Runs),
				fmt.Sprintf("%d/%d", p.Lost, p.Acknowledged), p.FenceRejections, other)
		}
	}
	for _, th := range s.Thresholds {
		fmt.Fprintf(w, "threshold, unfenced, margin %s TTL: %s\n", Format(float64(th.MarginMS)/float64(s.TTLMS)), th.Describe())
	}
}

// Describe is the threshold in words.
func (th Threshold) Describe() string {
	exp := "expected: no paused holder's lease check found"
	if th.Holders > 0 {
		exp = fmt.Sprintf("expected %s to %s TTL (median %s, from %d paused holders' time left at their lease check)",
			Format(th.ExpectedMin), Format(th.ExpectedMax), Format(th.ExpectedMedian), th.Holders)
	}
	if th.TimedHolders > 0 {
		exp += fmt.Sprintf("; timed, with the fault's latencies: %s to %s TTL (median %s; it foretold %d of %d runs)",
			Format(th.TimedMin), Format(th.TimedMax), Format(th.TimedMedian), th.Predicted, th.TimedHolders)
	}
	meas := "measured: no run lost an update"
	if th.FirstLoss != nil {
		meas = "measured: first loss at " + Format(*th.FirstLoss)
		if th.LastClean != nil {
			meas += ", none lost at " + Format(*th.LastClean)
		}
		if th.Half != nil {
			meas += ", half the runs lose at " + Format(*th.Half)
		}
	}
	return exp + "; " + meas
}
