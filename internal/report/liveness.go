package report

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// livenessSection is the table of results.json's liveness block: one row
// per measured fault (a holder crash, a server kill) with the time until
// the lock was granted again, in seconds, TTLs and leases, and the summary
// per kind above it. ok is false when the run has no liveness block.
func livenessSection(in *Input) (section, bool) {
	l := in.Results.Liveness
	if l == nil {
		return section{}, false
	}
	intro := []string{"How long the lock was unavailable after each fault that can take it away. " +
		"Holder crash (kill-holder): from the kill to the first grant to another client. " +
		"Server kill (kill:SCOPE): from the fault's start to the first grant to any client; " +
		"excess is that minus the normal gap between grants. Informational: it never changes the verdict."}
	if l.Message != "" {
		intro = append(intro, strings.ToUpper(l.Message[:1])+l.Message[1:]+".")
	}
	if l.Error != "" {
		intro = append(intro, "Not measured: "+l.Error)
	}
	if l.NormalGapS != nil {
		intro = append(intro, fmt.Sprintf("Normal gap between grants (median, outside faults): %.3fs.", *l.NormalGapS))
	}
	for _, s := range []struct {
		name string
		sum  *checkers.LivenessSummary
	}{{"Holder crashes", l.HolderCrash}, {"Server kills", l.ServerKill}} {
		if s.sum == nil {
			continue
		}
		line := fmt.Sprintf("%s: %d measured", s.name, s.sum.Count)
		if s.sum.Count > 0 {
			line += fmt.Sprintf(", median %.2fs = %.2f TTLs = %.2f leases, max %.2fs = %.2f TTLs",
				s.sum.MedianS, s.sum.MedianTTLs, s.sum.MedianLeases, s.sum.MaxS, s.sum.MaxTTLs)
		}
		if s.sum.MedianExcess != nil {
			line += fmt.Sprintf(", median excess %.2fs", *s.sum.MedianExcess)
		}
		if s.sum.Unrecovered > 0 {
			line += fmt.Sprintf(", %d never recovered before the end", s.sum.Unrecovered)
		}
		if s.sum.NotWaited > 0 {
			line += fmt.Sprintf(", %d with no client waiting (left out)", s.sum.NotWaited)
		}
		intro = append(intro, line+".")
	}
	workers := in.Test.Concurrency
	var rows [][]string
	for i, ev := range l.Events {
		if i == MaxRows {
			break
		}
		who := strings.Join(ev.Nodes, ", ")
		if p := ev.Process; p != nil {
			// The killed holder's container is its worker's: name the
			// client once, saying which of its processes in words.
			if who == p.Worker(workers) || who == "" {
				who = p.Client(workers)
			} else {
				who += " (holder " + p.Client(workers) + ")"
			}
		}
		granted := "not before the end"
		if ev.GrantNS != nil {
			granted = Secs(*ev.GrantNS) + " to " + ev.GrantProcess.Client(workers)
		}
		wait := fmt.Sprintf("%.3fs", ev.S)
		if !ev.Recovered {
			wait = "≥ " + wait
		}
		excess := "-"
		if ev.ExcessS != nil {
			excess = fmt.Sprintf("%.3fs", *ev.ExcessS)
		}
		waiting := "yes"
		if !ev.Waiting {
			waiting = "no (left out)"
		}
		rows = append(rows, []string{ev.Kind, ev.Fault, who, Secs(ev.FromNS), granted, wait,
			fmt.Sprintf("%.2f (TTL %s)", ev.TTLs, ev.TTL), fmt.Sprintf("%.2f (%s)", ev.Leases, ev.Lease), excess, waiting})
	}
	return TableSection("liveness", "Liveness", strings.Join(intro, " "),
		[]string{"kind", "fault", "nodes", "from", "granted again", "unavailable", "TTLs", "leases", "excess", "client waiting"}, rows), true
}
