package harness

import (
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// Judge decides whether the run tested what it claims, from its
// configuration and its history, and fills in res.FaultHits, res.Workers
// and res.Liveness (checkers.CheckLiveness, in the run's TTL and
// test.MaxLease; informational, it never changes the verdict). A run that
// found nothing wrong (valid) becomes unknown, with the reason in res.Note,
// when:
//
//   - a nemesis was asked for (not "none") and no fault was injected;
//   - every fault was aimed at a critical section (pause-holder,
//     partition-client) and none was in place while its holder waited
//     there;
//   - faults were injected and no client completed an operation after the
//     first one began (the clients were dead or idle).
//
// An invalid run stays invalid: what it found happened. Scripted runs (the
// demo) are told apart by test.Scripted and not judged.
func Judge(test store.TestInfo, events []history.Event, res *store.Results) {
	hits := &store.FaultHits{}
	for _, f := range res.Faults {
		hit, aimed := f.Aimed()
		if !aimed {
			continue
		}
		hits.Aimed++
		if hit {
			hits.Hit++
		} else {
			hits.Missed++
		}
	}
	if hits.Aimed > 0 {
		res.FaultHits = hits
	}
	if len(res.Faults) > 0 && test.Concurrency > 0 {
		res.Workers = activity(events, res.Faults[0].Start, test.Concurrency)
	}
	res.Liveness = checkers.CheckLiveness(events, livenessConfig(test))
	derive(test, events, res)
	if test.Scripted != "" || res.Valid() != checkers.Valid {
		return
	}
	why := ""
	switch {
	case test.Nemesis != "" && test.Nemesis != "none" && len(res.Faults) == 0:
		why = fmt.Sprintf("no fault was injected (--nemesis %s): the run tested nothing under faults", test.Nemesis)
	case hits.Aimed == len(res.Faults) && hits.Aimed > 0 && hits.Hit == 0:
		why = fmt.Sprintf("no fault reached a critical section (%d aimed, none hit)", hits.Aimed)
	case res.Workers != nil && res.Workers.Idle == res.Workers.Count:
		why = "no client completed an operation after the first fault: the clients were dead or idle"
	}
	if why != "" {
		res.SetValid(checkers.Unknown)
		res.Note = why
	}
}

// activity counts, of n clients (process p runs on client p mod n), those
// that completed no operation (ok or fail) after from.
func activity(events []history.Event, from int64, n int) *store.Workers {
	active := make([]bool, n)
	for _, e := range events {
		if e.Process < 0 || e.Process >= FinalReadProcess || e.Time <= from {
			continue
		}
		if e.Type == history.Ok || e.Type == history.Fail {
			active[int(e.Process)%n] = true
		}
	}
	w := &store.Workers{Count: n}
	for _, a := range active {
		if !a {
			w.Idle++
		}
	}
	return w
}

// livenessConfig is the TTL and longest lease of a run, as test.json
// records them (a run recorded before max_lease: the TTL).
func livenessConfig(test store.TestInfo) checkers.LivenessConfig {
	ttl := test.TTL
	lease, err := time.ParseDuration(test.MaxLease)
	if err != nil {
		lease = ttl
	}
	return checkers.LivenessConfig{TTL: ttl, Lease: lease}
}

// derive makes the records the history holds (record.Kind.Derive) and lets
// each that judges the run (record.Verdicter) make a valid run invalid or
// unknown, and a run that is unknown invalid, saying why in the note.
func derive(test store.TestInfo, events []history.Event, res *store.Results) {
	for _, k := range record.Kinds() {
		if k.Derive == nil {
			continue
		}
		r := k.Derive(record.Run{Spec: test.Spec, HistoryStartedMono: test.HistoryStartedMono}, events)
		res.Records = res.Records.Put(r)
		v, ok := r.(record.Verdicter)
		if r == nil || !ok {
			continue
		}
		switch verdict, why := v.Verdict(); {
		case verdict == record.Invalid && res.Valid() != checkers.Invalid:
			res.SetValid(checkers.Invalid)
			res.Note = why
		case verdict == record.Unknown && res.Valid() == checkers.Valid:
			res.SetValid(checkers.Unknown)
			res.Note = why
		}
	}
}
