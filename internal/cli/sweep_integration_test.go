package cli

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/verdicts/sweep"
)

// A tiny real sweep on etcd: a holder paused half a TTL (with a margin of
// 0.75 TTL its write lands 250 ms before its lease can end) loses nothing;
// paused 2.5 TTLs, unfenced, it erases another client's acknowledged
// update, and token fencing refuses its write. Each of the four runs pauses
// exactly one holder, in full, while it waits at its failpoint.
func TestSweep(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	res := t.TempDir()
	r := runCLI(t, nil, "sweep", "--target", "etcd", "--pause", "0.5,2.5", "--runs", "1", "--fencing", "none,token",
		"--margin", "0.75", "--results", res, "--quiet")
	if r.code != exitValid {
		t.Fatalf("exit %d, want 0 (no fenced run lost an update)", r.code)
	}
	b, err := os.ReadFile(filepath.Join(res, sweep.File))
	if err != nil {
		t.Fatal(err)
	}
	var s sweep.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Points) != 4 || s.TTLMS != 2000 || s.LeaseMS != 2000 || s.ExitCode != 0 {
		t.Fatalf("%d points, TTL %d ms, lease %d ms, exit %d; want 4, 2000, 2000, 0", len(s.Points), s.TTLMS, s.LeaseMS, s.ExitCode)
	}
	cleanHeld := true // the clean point lost nothing
	for _, p := range s.Points {
		name := p.Fencing + " x" + sweep.Format(p.Pause)
		// A run whose pause was not measured (a loaded machine can make
		// the time limit cut it short) is run again with the next seed.
		if p.Runs != 1 || len(p.Trials) > 1+matrix.SweepRetries || p.Missed != len(p.Trials)-1 || p.MarginMS != 1500 {
			t.Fatalf("%s: %d measured runs of %d (%d not measured), margin %d ms; want 1, the others not measured, 1500: %+v",
				name, p.Runs, len(p.Trials), p.Missed, p.MarginMS, p.Trials)
		}
		tr := p.Trials[len(p.Trials)-1]
		// The pause is the SIGSTOP's time and the schedule's hold: M TTLs
		// from the holder's failpoint, its window at least the hold.
		// A SIGSTOP that itself took the whole pause (1.1 s of a 1 s
		// pause, on a loaded machine) leaves the schedule nothing to
		// hold: no hold is recorded then.
		hold := int64(0)
		if tr.HoldMS != nil {
			hold = *tr.HoldMS
		}
		if tr.Faults != 1 || !tr.Hit || tr.MissedWhy != "" || tr.StopTookMS == nil || (tr.HoldMS == nil && *tr.StopTookMS < p.PauseMS-1) ||
			tr.HeldMS < hold || *tr.StopTookMS+hold < p.PauseMS-1 || tr.LeftMS == nil || *tr.LeftMS <= 1500 {
			t.Errorf("%s: %d pauses, hit %v, %q, window %d ms, stop and hold %v+%v ms of %d, left %v; want one pause in full, hit, more than the margin left",
				name, tr.Faults, tr.Hit, tr.MissedWhy, tr.HeldMS, deref(tr.StopTookMS), deref(tr.HoldMS), p.PauseMS, deref(tr.LeftMS))
		}
		wantLossy := !p.Fenced && p.Pause == 2.5
		if !p.Fenced && p.Pause == 0.5 && p.Lost > 0 && overran(tr, p.PauseMS, s.WorkMS) {
			// The plan leaves the write at least 250 ms of its lease
			// (a margin of 1.5 s, a pause of 1 s, 250 ms of work). On
			// a loaded machine the holder can take longer than that to
			// resume and write, and its write then lands at the end of
			// its lease or after: the loss is the sweep measuring that,
			// not a lease ended early.
			t.Logf("%s: lost %d, its write left with %v ms of its lease (window %d ms, %v ms left at the check): the machine ate the slack",
				name, p.Lost, deref(tr.SlackMS), tr.HeldMS, deref(tr.LeftMS))
			cleanHeld = false
			continue
		}
		if (p.Lossy == 1) != wantLossy || (p.Lost > 0) != wantLossy {
			t.Errorf("%s: %d lossy runs, %d lost of %d; want lossy %v (slack at the write %v ms)", name, p.Lossy, p.Lost, p.Acknowledged, wantLossy, deref(tr.SlackMS))
		}
		if p.Fenced && p.Pause == 2.5 && p.FenceRejections < 1 {
			t.Errorf("%s: no fence rejection; the stale holder's write should be refused", name)
		}
		if _, err := os.Stat(filepath.Join(res, tr.Run, "results.json")); err != nil {
			t.Errorf("%s: run %q has no results.json: %v", name, tr.Run, err)
		}
	}
	if len(s.Thresholds) != 1 {
		t.Fatalf("%d thresholds, want 1", len(s.Thresholds))
	}
	th := s.Thresholds[0]
	// Left > 1.5s at the check: (left - 250ms)/2s is above 0.625 and at
	// most 0.875, between the clean and the lossy points.
	if th.Holders != 2 || th.ExpectedMin <= 0.625 || th.ExpectedMax > 0.875 || th.FirstLoss == nil {
		t.Errorf("threshold %+v: want 2 holders, expected in (0.625, 0.875], a first loss", th)
	}
	if cleanHeld && (th.LastClean == nil || *th.LastClean != 0.5 || *th.FirstLoss != 2.5) {
		t.Errorf("threshold %+v: want clean at 0.5, first loss at 2.5", th)
	}
	svg, err := os.ReadFile(filepath.Join(res, sweep.Chart))
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	paths := 0
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("sweep.svg is not well-formed: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "path" {
			paths++
		}
	}
	if paths != 2 {
		t.Errorf("sweep.svg has %d lines, want 2 (none, token)", paths)
	}
	wants := []string{"threshold, unfenced, margin 0.75 TTL: expected"}
	if cleanHeld {
		wants = append(wants, "none lost at 0.5", "first loss at 2.5")
	}
	for _, want := range wants {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	assertRunsGone(t, res)
}

// overran says whether a trial's paused holder sent its write with less
// than half the slack its plan left it: the time it had left at its check,
// less the pause and the work. A quiet machine leaves nearly all of it.
func overran(tr sweep.Trial, pauseMS, workMS int64) bool {
	if tr.SlackMS == nil || tr.LeftMS == nil {
		return false
	}
	planned := *tr.LeftMS - pauseMS - workMS
	return *tr.SlackMS < planned/2
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
