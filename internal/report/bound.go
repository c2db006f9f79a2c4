package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// A report shows what a history holds, and a history can hold anything: one
// 50 MB string in a fault's parameters once made a 2 GB report, since the
// report repeats a fault's description in every figure and lane. So Render
// first bounds what it shows (bound), and then the page itself (MaxReport).
const (
	// MaxText bounds a string the report shows (a message, a fault's
	// parameter, an operation's error): longer ones are cut, saying how
	// many bytes more there were.
	MaxText = 2 << 10
	// MaxName bounds a name: a fault, a node, a parameter's key, a
	// function, a server.
	MaxName = 128
	// MaxItems bounds the nodes and the parameters of one fault (which
	// also get at most MaxText bytes in all), and the servers and images of
	// the configuration.
	MaxItems = 32
	// maxWorkers bounds the client lanes (a run has at most 64 workers).
	maxWorkers = 256
	// MaxReport bounds the page: past it the report is replaced by a short
	// one that says why (a real run's report is a few MB at most: 0.8 MB
	// for 100,000 operations).
	MaxReport = 16 << 20
)

// cut is Clip (the report's own name for it).
var cut = Clip

// Clip is safetext.Clip: the cutter of every value fencecheck shows.
func Clip(s string, n int) string { return safetext.Clip(s, n) }

// bound returns in with everything the report shows bounded: strings cut
// (MaxText, MaxName), lists of names shortened (MaxItems), the lanes
// bounded (maxWorkers). It copies what it changes; in's own values are
// left as they are.
func bound(in Input) Input {
	// Held events are bounded here; streamed ones as they are read
	// (EachEvent), AllEvents's included: never twice (a cut string is
	// longer than its bound, and says how much it lost).
	held := !in.streamed()
	if in.Test.Concurrency <= 0 || in.Test.Concurrency > maxWorkers {
		// The lanes come from the history's processes: all of it.
		in.Test = boundTest(in.Test, in.AllEvents())
	} else {
		in.Test = boundTest(in.Test, nil)
	}
	if held {
		in.Events = boundEvents(in.Events)
	}
	if in.Results != nil {
		in.Results = boundResults(in.Results)
	}
	in.HistoryErr = cut(in.HistoryErr, MaxText)
	if len(in.Files) > MaxRows {
		in.Files = append(slices.Clip(in.Files[:MaxRows]), File{Name: fmt.Sprintf("… and %d more files", len(in.Files)-MaxRows), Size: -1})
	}
	return in
}

// boundTest bounds the configuration: its strings, its servers and images,
// and its concurrency (the number of client lanes), which when absurd is
// taken from the history's processes, at most maxWorkers.
func boundTest(t store.TestInfo, events []history.Event) store.TestInfo {
	for _, s := range []*string{&t.Name, &t.Fencecheck, &t.Target, &t.Version, &t.TargetVersion, &t.Recipe, &t.Client, &t.Workload, &t.Fencing,
		&t.Nemesis, &t.ReadMode, &t.ClusterReady, &t.MaxLease, &t.Profile, &t.Scripted, &t.AuditLogName, &t.FencecheckRevision} {
		*s = cut(*s, MaxName)
	}
	if len(t.Resource) > MaxItems {
		t.Resource = slices.Clip(t.Resource[:MaxItems])
	}
	for i := range t.Resource {
		t.Resource[i] = cut(t.Resource[i], MaxName)
	}
	t.Image = boundMap(t.Image, MaxName)
	if len(t.Servers) > MaxItems {
		t.Servers = slices.Clip(t.Servers[:MaxItems])
	}
	servers := make([]store.NodeInfo, len(t.Servers))
	for i, s := range t.Servers {
		servers[i] = store.NodeInfo{Name: cut(s.Name, MaxName), Addr: cut(s.Addr, MaxName), Tier: cut(s.Tier, MaxName)}
	}
	t.Servers = servers
	t.Images, t.ImageIDs = boundMap(t.Images, MaxName), boundMap(t.ImageIDs, MaxName)
	if t.Concurrency <= 0 || t.Concurrency > maxWorkers {
		workers := 0
		for _, e := range events {
			if e.Process >= 0 && e.Process < 1_000_000 { // clients, not the final read
				workers = max(workers, int(min(e.Process, maxWorkers-1))+1)
			}
		}
		t.Concurrency = max(workers, 1)
	}
	return t
}

// boundMap keeps at most MaxItems entries (the first keys in order), keys
// and values cut to n bytes.
func boundMap(m map[string]string, n int) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, min(len(m), MaxItems))
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == MaxItems {
			out[fmt.Sprintf("… and %d more", len(m)-MaxItems)] = ""
			break
		}
		out[cut(k, n)] = cut(m[k], n)
	}
	return out
}

// boundFault bounds a fault: its name, its error, and its nodes and its
// parameters, which each get at most MaxItems entries and MaxText bytes in
// all (a fault's description is repeated in every figure and lane that
// shows it).
func boundFault(f history.FaultValue) history.FaultValue {
	f.Fault = cut(f.Fault, MaxName)
	f.Leader = cut(f.Leader, MaxName)
	f.Error = cut(f.Error, MaxText)
	var nodes []string
	budget := MaxText
	for i, n := range f.Nodes {
		if i == MaxItems || budget <= 0 {
			nodes = append(nodes, fmt.Sprintf("… and %d more", len(f.Nodes)-i))
			break
		}
		n = cut(n, min(MaxName, max(budget, 16)))
		budget -= len(n)
		nodes = append(nodes, n)
	}
	f.Nodes = nodes
	if f.Recorded != nil {
		params := make(map[string]string, min(len(f.Recorded), MaxItems+1))
		budget := MaxText
		for i, k := range slices.Sorted(maps.Keys(f.Recorded)) {
			if i == MaxItems || budget <= 0 {
				params["…"] = fmt.Sprintf("and %d more", len(f.Recorded)-i)
				break
			}
			ck := cut(k, MaxName)
			v := cut(f.Recorded[k], max(budget-len(ck), 16))
			budget -= len(ck) + len(v)
			params[ck] = v
		}
		f.Recorded = params
	}
	f.Replay = cut(f.Replay, MaxText)
	f.Health.BeforeError, f.Health.AfterError = cut(f.Health.BeforeError, MaxText), cut(f.Health.AfterError, MaxText)
	if h := f.Holder; h != nil {
		c := *h
		c.Phase = cut(c.Phase, MaxText)
		f.Holder = &c
	}
	f.Figures = boundFigures(f.Figures)
	return f
}

// boundFigures bounds a fault's own figures as boundFault bounds the params
// of earlier runs: at most MaxItems of them, in name order, their strings
// cut to MaxText together.
func boundFigures(b json.RawMessage) json.RawMessage {
	if len(b) <= MaxName || (!hasLongString(b, MaxName) && len(b) <= MaxItems*MaxName) {
		return b
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	out := make(map[string]json.RawMessage, min(len(m), MaxItems+1))
	budget := MaxText
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == MaxItems || budget <= 0 {
			out["…"], _ = json.Marshal(fmt.Sprintf("and %d more", len(m)-i))
			break
		}
		ck := cut(k, MaxName)
		budget -= len(ck)
		v := m[k]
		var str string
		if json.Unmarshal(v, &str) == nil {
			str = cut(str, max(budget, 16))
			budget -= len(str)
			out[ck], _ = json.Marshal(str)
			continue
		}
		if hasLongString(v, MaxText) {
			d := json.NewDecoder(bytes.NewReader(v))
			d.UseNumber()
			var x any
			if d.Decode(&x) != nil {
				continue
			}
			v, _ = json.Marshal(cutStrings(x))
		}
		budget -= len(v)
		out[ck] = v
	}
	bounded, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return bounded
}

// boundEvents bounds the events' functions and the strings in their
// values (a fault's as boundFault does); numbers and lists of numbers are
// left whole. Events that need nothing are not copied.
func boundEvents(events []history.Event) []history.Event {
	var out []history.Event // nil until an event changes
	for i, e := range events {
		e, changed := boundEvent(e)
		if !changed {
			continue
		}
		if out == nil {
			out = slices.Clone(events)
		}
		out[i] = e
	}
	if out == nil {
		return events
	}
	return out
}

// boundEvent is e bounded (its function, the strings in its value), and
// whether that changed it.
func boundEvent(e history.Event) (history.Event, bool) {
	changed := false
	if len(e.F) > MaxName {
		e.F, changed = cut(e.F, MaxName), true
	}
	if v, ok := boundValue(e); ok {
		e.Value, changed = v, true
	}
	return e, changed
}

// boundValue returns e's value bounded, and whether it changed. A value
// with no string longer than the bound (always so of a value no longer
// than the bound) is kept as it is, without decoding it.
func boundValue(e history.Event) (json.RawMessage, bool) {
	if e.Process == history.Nemesis && len(e.Value) > MaxName &&
		(hasLongString(e.Value, MaxName) || len(e.Value) > MaxItems*MaxName) {
		var f history.FaultValue
		if json.Unmarshal(e.Value, &f) == nil {
			b, err := json.Marshal(boundFault(f))
			return b, err == nil
		}
	}
	if len(e.Value) <= MaxText || !hasLongString(e.Value, MaxText) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(e.Value))
	d.UseNumber() // numbers stay exactly as they were
	var v any
	if d.Decode(&v) != nil {
		return nil, false // the report skips what does not decode
	}
	b, err := json.Marshal(cutStrings(v))
	return b, err == nil
}

// cutStrings cuts every string in a decoded JSON value, keys included, to
// MaxText.
func cutStrings(v any) any {
	switch v := v.(type) {
	case string:
		return cut(v, MaxText)
	case []any:
		for i := range v {
			v[i] = cutStrings(v[i])
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[cut(k, MaxText)] = cutStrings(x)
		}
		return out
	}
	return v
}

// hasLongString reports whether the JSON text b holds a string (a key or a
// value) of more than n bytes as written, without decoding it.
func hasLongString(b []byte, n int) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		start := i
		for i++; i < len(b) && b[i] != '"'; i++ {
			if b[i] == '\\' {
				i++
			}
		}
		if i-start-1 > n {
			return true
		}
	}
	return false
}

// textCutter is a workload result whose free text can be bounded: CutText
// returns a copy (of its own type) with every such text cut.
type textCutter interface {
	CutText(cut func(string) string) any
}

// boundResults bounds what the report shows of the results: the faults,
// the note, the checkers' messages and errors.
func boundResults(r *store.Results) *store.Results {
	out := *r
	out.Note = cut(r.Note, MaxText)
	out.Faults = make([]history.Fault, len(r.Faults))
	for i, f := range r.Faults {
		out.Faults[i] = history.Fault{FaultValue: boundFault(f.FaultValue), Start: f.Start, Stop: f.Stop}
	}
	if c, ok := r.Result.(textCutter); ok {
		if wr, ok := c.CutText(func(s string) string { return cut(s, MaxText) }).(store.WorkloadResult); ok {
			out.Result = wr
		}
	}
	out.Records = r.Records.Bound(record.Limits{Name: MaxName, Text: MaxText, Items: MaxItems})
	return &out
}
