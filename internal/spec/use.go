package spec

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Flags adds to fs a flag for each knob that only accepts (all when only
// is nil), bound to s's field: parsing fs sets s. Its default is s's value
// as it is now. choices fills in the lists of names a help refers to
// (Knob.Choices), from the command's tables.
func (s *Spec) Flags(fs *flag.FlagSet, only func(Knob) bool, choices map[string]string) {
	for _, k := range Knobs {
		if only != nil && !only(k) {
			continue
		}
		help := k.Help
		if c := choices[k.Choices]; c != "" {
			help += ": " + c
		}
		fs.Var(k.field(s), k.Flag, help)
	}
}

// Args is the `fencecheck run` command line (without "run") that makes s
// again: every replayable knob that is set, in table order. A resolved
// Spec's derived durations are written too, so that a later default does
// not change the run.
func (s Spec) Args() []string {
	var args []string
	for _, k := range Knobs {
		if !k.Replay || k.Secret {
			continue
		}
		v := k.field(&s)
		switch {
		case v.zero() && k.Unset != "":
			args = append(args, "--"+k.Flag, k.Unset)
		case v.zero():
		case isBool(v):
			args = append(args, "--"+k.Flag)
		default:
			args = append(args, "--"+k.Flag, v.String())
		}
	}
	return args
}

// Redact is a command line with the value of every secret knob (--auth)
// replaced by "REDACTED", in each form the flag package takes (--auth V,
// --auth=V, -auth V, -auth=V): what matrix.json and sweep.json record of
// the command that made them.
func Redact(args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for _, k := range Knobs {
		if !k.Secret {
			continue
		}
		for i := 0; i < len(out); i++ {
			name, _, hasValue := strings.Cut(out[i], "=")
			if name != "-"+k.Flag && name != "--"+k.Flag {
				continue
			}
			if hasValue {
				out[i] = name + "=REDACTED"
			} else if i+1 < len(out) {
				out[i+1] = "REDACTED"
				i++
			}
		}
	}
	return out
}

func isBool(v value) bool {
	_, ok := v.(boolValue)
	return ok
}

// Parse reads a command line of knobs (Args's) into a Spec that starts
// from the zero Spec: Parse(s.Args()) gives s's replayable knobs back.
func Parse(args []string) (Spec, error) {
	var s Spec
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.Flags(fs, func(k Knob) bool { return k.Replay }, nil)
	if err := fs.Parse(args); err != nil {
		return Spec{}, err
	}
	if fs.NArg() > 0 {
		return Spec{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return s, nil
}

// ForWorkload is s with the knobs of other workloads than s.Workload unset
// (Knob.Workload): what test.json records.
func (s Spec) ForWorkload() Spec {
	for _, k := range Knobs {
		if k.Workload != "" && k.Workload != s.Workload {
			k.field(&s).reset()
		}
	}
	return s
}

// Row is one line of the report's configuration: a knob's flag and value.
type Row struct{ Flag, Value string }

// Rows are the knobs that are set in s, as the report lists them.
func (s Spec) Rows() []Row {
	var rows []Row
	for _, k := range Knobs {
		v := k.field(&s)
		if v.zero() || k.Flag == "results" || k.Secret {
			continue
		}
		rows = append(rows, Row{k.Flag, v.String()})
	}
	return rows
}

// CheckBounds checks every bounded knob of a resolved Spec, in table
// order; the error names the flag and its bounds (callers wrap it as their
// bad-configuration error: exit 254).
func (s Spec) CheckBounds() error {
	for _, k := range Knobs {
		if err := k.CheckBound(&s); err != nil {
			return err
		}
	}
	return nil
}

// CheckBound checks the knob's value in s against its bounds (Positive,
// Least, Most); a knob without bounds, or not a duration or a count, is
// nil. The error names the flag and its bounds.
func (k Knob) CheckBound(s *Spec) error {
	if !k.Positive && k.Least == 0 && k.Most == 0 {
		return nil
	}
	var n int64
	show := func(x int64) string { return fmt.Sprint(x) }
	switch v := k.field(s).(type) {
	case durationValue:
		n = int64(*v.p)
		show = func(x int64) string { return time.Duration(x).String() }
	case intValue:
		n = int64(*v.p)
	default:
		return nil
	}
	switch {
	case k.Positive && n <= 0:
		return fmt.Errorf("--%s must be positive, not %s", k.Flag, show(n))
	case n < k.Least:
		return fmt.Errorf("--%s %s: at least %s", k.Flag, show(n), show(k.Least))
	case k.Most > 0 && n > k.Most:
		return fmt.Errorf("--%s %s: at most %s", k.Flag, show(n), show(k.Most))
	}
	return nil
}

// MarshalJSON writes the recorded knobs that are set, each under its key.
func (s Spec) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for _, k := range Knobs {
		if v := k.field(&s); k.Key != "" && !k.Secret && !v.zero() {
			m[k.Key] = v.js()
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads the recorded knobs; keys it does not know are left
// to the caller (test.json's other fields), a malformed value is an error
// naming its key.
func (s *Spec) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, k := range Knobs {
		raw, ok := m[k.Key]
		if k.Key == "" || !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		if err := k.field(s).unjs(raw); err != nil {
			return fmt.Errorf("%s: %s is not a value of --%s: %w", k.Key, clip(raw), k.Flag, err)
		}
	}
	return nil
}

func clip(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}
