package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
)

// FaultValue is the value of a nemesis event: which fault, on which nodes,
// and its record: what every fault records (its hold, the lock holder it
// was aimed at, the cluster's health around it, the replayed step), typed
// here, and the fault's own figures (Figures), typed by the fault (its
// record type beside it in internal/systems/nemesis). In history.jsonl:
//
//	{"fault":"pause-holder","nodes":["w1"],"hold":"5.583s",
//	 "holder":{"process":0,"token":31,"hit":true,"phase":"..."},
//	 "health":{"before":"11ms","after":"7ms"},"figures":{"ttl_multiple":1.5}}
//
// Runs recorded before typed records wrote every figure as a string in
// "params"; such a value reads into the same fields (see faultv0.go), and
// keeps its params as recorded in Recorded, so that it is written back and
// shown as it was.
type FaultValue struct {
	Fault string   `json:"fault"`
	Nodes []string `json:"nodes,omitempty"`
	// Hold is how long the fault was to be in effect (a kill: how long its
	// nodes stay down).
	Hold Duration `json:"hold,omitempty"`
	// Holder is the lock holder the fault was aimed at, if it was.
	Holder *Aim `json:"holder,omitempty"`
	// Leader is the node a fault aimed at the leader took as the leader,
	// where the fault's nodes are more than that one (partition:leader:
	// every node drops some); "" else (kill:leader's one node is it).
	Leader string `json:"leader,omitempty"`
	// Health is the cluster's health check before the fault and after its
	// heal.
	Health Health `json:"health,omitzero"`
	// Took is how long the fault's injection took, from the nemesis's
	// first question (which node, which holder) to the fault being in
	// place, the Engine's answers included. The start is recorded when it
	// is in place, so the fault may have taken effect up to Took before
	// its recorded start (a kill whose Engine call lagged on a loaded
	// machine). 0 when not recorded (runs from before it was).
	Took Duration `json:"took,omitempty"`
	// Replay is the step of a recorded schedule the fault replays ("step 2
	// of 5", with the nodes when they differ from the recorded ones).
	Replay string `json:"replay,omitempty"`
	// Figures are the fault's own: a JSON object written from the fault's
	// record type, which reads it back (DecodeFigures).
	Figures json.RawMessage `json:"figures,omitempty"`
	Error   string          `json:"error,omitempty"`
	// Recorded are the params of a run recorded before typed records, as
	// recorded (nil for a newer run): written back as they were, and shown
	// as they were (Shown). Nothing reads a figure from them: the decoder
	// put each in its field.
	Recorded map[string]string `json:"-"`
}

// Aim is the lock holder a fault was aimed at: its process and token, and
// whether the fault was in place while the holder waited at its failpoint.
type Aim struct {
	Process Process `json:"process"`
	// Token is the holder's fencing token (nil when it had none: a
	// scripted waiter).
	Token *int64 `json:"token,omitempty"`
	// Hit is whether the fault was in place while the holder still
	// waited at its failpoint (nil when not recorded: runs from before
	// hits were).
	Hit *bool `json:"hit,omitempty"`
	// Phase is where the holder was taken.
	Phase string `json:"phase,omitempty"`
	// TTL and Lease are the lock's, for a fault after which the lock
	// must pass on (kill-holder).
	TTL   Duration `json:"ttl,omitempty"`
	Lease Duration `json:"lease,omitempty"`
	// StopTook is how long the holder's freeze took to be in place, for a
	// hold that counts from when the holder was found (pause-holder:xM).
	StopTook *Duration `json:"stop_took,omitempty"`
}

// Health is the cluster's health around a fault: how long the check before
// it took, and how long the cluster took to serve after the heal; an error
// when it did not serve.
type Health struct {
	Before      Duration `json:"before,omitempty"`
	BeforeError string   `json:"before_error,omitempty"`
	After       Duration `json:"after,omitempty"`
	AfterError  string   `json:"after_error,omitempty"`
}

// Duration is a span of time in a fault record, written as Go writes a
// duration ("5.583s").
type Duration time.Duration

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes d as Go writes a duration.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("history: %q is not a duration", b)
	}
	*d = Duration(v)
	return nil
}

// Ms is d rounded to the millisecond, as records keep durations.
func Ms(d time.Duration) Duration { return Duration(d.Round(time.Millisecond)) }

// Aimed tells whether the fault was aimed at a holder's failpoint and
// recorded whether it hit it.
func (v FaultValue) Aimed() (hit, aimed bool) {
	if v.Holder == nil || v.Holder.Hit == nil {
		return false, false
	}
	return *v.Holder.Hit, true
}

// HeldProcess is the process of the holder the fault was aimed at.
func (v FaultValue) HeldProcess() (Process, bool) {
	if v.Holder == nil {
		return 0, false
	}
	return v.Holder.Process, true
}

// FiguresOf writes a fault's own record as Figures (nil for nil or an
// empty object).
func FiguresOf(rec any) json.RawMessage {
	if rec == nil {
		return nil
	}
	b, err := json.Marshal(rec)
	if err != nil || string(b) == "{}" || string(b) == "null" {
		return nil
	}
	return b
}

// DecodeFigures reads the fault's own figures into its record type (a
// pointer); no figures leave it as it is.
func (v FaultValue) DecodeFigures(rec any) error {
	if len(v.Figures) == 0 {
		return nil
	}
	if err := json.Unmarshal(v.Figures, rec); err != nil {
		return fmt.Errorf("history: %s's figures: %w", v.Fault, err)
	}
	return nil
}

// faultFields are FaultValue's fields without its methods.
type faultFields FaultValue

// faultJSON is FaultValue's JSON form read back: the typed record, or the
// params of an earlier run.
type faultJSON struct {
	faultFields
	Params map[string]string `json:"params,omitempty"`
}

// MarshalJSON writes the typed record, or, for a value read from a run
// recorded before typed records, its params as they were.
func (v FaultValue) MarshalJSON() ([]byte, error) {
	if v.Recorded != nil {
		return json.Marshal(struct {
			Fault  string            `json:"fault"`
			Nodes  []string          `json:"nodes,omitempty"`
			Params map[string]string `json:"params,omitempty"`
			Error  string            `json:"error,omitempty"`
		}{v.Fault, v.Nodes, v.Recorded, v.Error})
	}
	return json.Marshal(faultFields(v))
}

// UnmarshalJSON reads either form.
func (v *FaultValue) UnmarshalJSON(b []byte) error {
	var j faultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if len(j.Figures) > 0 && !bytes.HasPrefix(bytes.TrimSpace(j.Figures), []byte("{")) {
		return fmt.Errorf("history: fault %q: figures are not an object", j.Fault)
	}
	*v = FaultValue(j.faultFields)
	if j.Params != nil {
		v.fromParams(j.Params)
	}
	return nil
}

// merge adds a fault's stop value to its start's: what the stop recorded
// (how the cluster recovered, what the fault measured) over the start's.
func (v *FaultValue) merge(stop FaultValue) {
	if v.Recorded != nil && stop.Recorded != nil {
		m := maps.Clone(v.Recorded)
		maps.Copy(m, stop.Recorded)
		v.fromParams(m)
		return
	}
	if stop.Recorded != nil || v.Recorded != nil {
		v.Recorded = nil
	}
	if stop.Hold != 0 {
		v.Hold = stop.Hold
	}
	if stop.Holder != nil {
		v.Holder = stop.Holder
	}
	h := &v.Health
	for _, f := range []struct {
		to   *Duration
		from Duration
	}{{&h.Before, stop.Health.Before}, {&h.After, stop.Health.After}} {
		if f.from != 0 {
			*f.to = f.from
		}
	}
	for _, f := range []struct{ to, from *string }{{&h.BeforeError, &stop.Health.BeforeError}, {&h.AfterError, &stop.Health.AfterError}, {&v.Replay, &stop.Replay}} {
		if *f.from != "" {
			*f.to = *f.from
		}
	}
	v.Figures = mergeObjects(v.Figures, stop.Figures)
}

// mergeObjects adds b's fields to a's (JSON objects); b when either is not
// an object.
func mergeObjects(a, b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 || bytes.Equal(a, b) {
		return b
	}
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return b
	}
	maps.Copy(ma, mb)
	out, err := json.Marshal(ma)
	if err != nil {
		return b
	}
	return out
}

// Shown is the record as people read it, name=value: hold, took, the holder's
// process, token, hit and phase, healthy_before, healthy_after, replay, and
// each figure under its name (a list joined by commas). A run recorded
// before typed records shows its params as recorded.
func (v FaultValue) Shown() map[string]string {
	if v.Recorded != nil {
		return maps.Clone(v.Recorded)
	}
	m := map[string]string{}
	set := func(k string, d Duration) {
		if d != 0 {
			m[k] = d.String()
		}
	}
	set("hold", v.Hold)
	set("took", v.Took)
	if h := v.Holder; h != nil {
		m["process"] = h.Process.String()
		if h.Token != nil {
			m["token"] = strconv.FormatInt(*h.Token, 10)
		}
		if h.Hit != nil {
			m["hit"] = strconv.FormatBool(*h.Hit)
		}
		if h.Phase != "" {
			m["phase"] = h.Phase
		}
		set("ttl", h.TTL)
		set("lease", h.Lease)
		if h.StopTook != nil {
			m["stop_took"] = h.StopTook.String()
		}
	}
	switch {
	case v.Health.BeforeError != "":
		m["healthy_before"] = "no: " + v.Health.BeforeError
	case v.Health.Before != 0:
		m["healthy_before"] = "after " + v.Health.Before.String()
	}
	switch {
	case v.Health.AfterError != "":
		m["healthy_after"] = "no: " + v.Health.AfterError
	case v.Health.After != 0:
		m["healthy_after"] = v.Health.After.String()
	}
	if v.Replay != "" {
		m["replay"] = v.Replay
	}
	var figs map[string]json.RawMessage
	if len(v.Figures) > 0 && json.Unmarshal(v.Figures, &figs) == nil {
		for k, f := range figs {
			m[k] = shownFigure(f)
		}
	}
	return m
}

// shownFigure writes a figure: a string as it is, a list joined by commas,
// anything else as its JSON.
func shownFigure(f json.RawMessage) string {
	var s string
	if json.Unmarshal(f, &s) == nil {
		return s
	}
	var list []json.RawMessage
	if json.Unmarshal(f, &list) == nil {
		parts := make([]string, len(list))
		for i, e := range list {
			parts[i] = shownFigure(e)
		}
		return strings.Join(parts, ",")
	}
	var b bytes.Buffer
	if json.Compact(&b, f) != nil {
		return string(f)
	}
	return b.String()
}

// Fault is one fault window from the nemesis events: a start and the stop
// that follows it for the same fault and nodes (Stop is -1 when the history
// ends first).
type Fault struct {
	FaultValue
	Start, Stop int64
}

// MarshalJSON writes the fault's value and its window (FaultValue's own
// MarshalJSON would otherwise stand for the whole).
func (f Fault) MarshalJSON() ([]byte, error) {
	v, err := f.FaultValue.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(v[:len(v)-1], fmt.Sprintf(`,"Start":%d,"Stop":%d}`, f.Start, f.Stop)...), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var w struct{ Start, Stop int64 }
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if err := f.FaultValue.UnmarshalJSON(b); err != nil {
		return err
	}
	f.Start, f.Stop = w.Start, w.Stop
	return nil
}

// Faults pairs the nemesis start and stop events into windows, in start
// order; a window's record is its start's, plus its stop's.
func Faults(events []Event) ([]Fault, error) {
	var out []Fault
	open := map[string]int{}
	for _, e := range events {
		if e.Process != Nemesis {
			continue
		}
		var v FaultValue
		if err := e.Decode(&v); err != nil {
			return nil, err
		}
		key := fmt.Sprint(v.Fault, v.Nodes)
		switch e.F {
		case FStart:
			out = append(out, Fault{FaultValue: v, Start: e.Time, Stop: -1})
			open[key] = len(out) - 1
		case FStop:
			if i, ok := open[key]; ok {
				out[i].Stop = e.Time
				if v.Error != "" && out[i].Error == "" {
					out[i].Error = v.Error
				}
				v.Error = ""
				out[i].merge(v)
				delete(open, key)
			}
		default:
			return nil, fmt.Errorf("history: event %d: nemesis f %q, want start or stop", e.Index, e.F)
		}
	}
	return out, nil
}
