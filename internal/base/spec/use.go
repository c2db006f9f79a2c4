package spec

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
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

// Redact is the command line args, which fs parsed without error, written
// again as fs read it, flag by flag: each flag "--NAME VALUE" ("--NAME" or
// "--NAME=false" for a boolean one), its value the word the flag package
// took for it, and the value of every secret knob (Knob.Secret: --auth)
// "REDACTED", whatever form the command line gave it (--auth V, --auth=V,
// -auth V, repeated, or a word that looks like a flag but was another
// flag's value); arguments after the flags are kept, a secret knob's value
// among them redacted. What matrix.json and sweep.json record of the
// command that made them.
func Redact(fs *flag.FlagSet, args []string) []string {
	secrets := map[string]bool{}
	for _, k := range Knobs {
		if k.Secret {
			secrets[k.Flag] = true
		}
	}
	var out []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			break // the flag package stops here: the rest are arguments
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		boolean := f != nil && isBoolFlag(f.Value)
		if !hasValue && !boolean && i+1 < len(args) {
			i++
			value, hasValue = args[i], true
		}
		if secrets[name] && hasValue {
			value = "REDACTED"
		}
		switch {
		case boolean && hasValue:
			out = append(out, "--"+name+"="+value)
		case hasValue:
			out = append(out, "--"+name, value)
		default:
			out = append(out, "--"+name)
		}
	}
	for _, a := range args[i:] {
		if secretValue(fs, secrets, a) {
			a = "REDACTED"
		}
		out = append(out, a)
	}
	return out
}

// isBoolFlag says whether the flag package reads v as a boolean flag (one
// that takes its value only after "=").
func isBoolFlag(v flag.Value) bool {
	b, ok := v.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// secretValue says whether a is the value fs holds for a secret knob.
func secretValue(fs *flag.FlagSet, secrets map[string]bool, a string) bool {
	for name := range secrets {
		if f := fs.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() == a {
			return true
		}
	}
	return false
}

// TakeAttach sets every Attach knob of s (--endpoints, --tls-*, --auth,
// --auth-file) to its value in from, set or not.
func (s *Spec) TakeAttach(from Spec) {
	for _, k := range Knobs {
		if k.Attach {
			k.Copy(s, &from)
		}
	}
}

// AttachFlags are the Attach knobs set in s, as flags ("--endpoints",
// "--auth-file", ...), in table order.
func (s Spec) AttachFlags() []string {
	var out []string
	for _, k := range Knobs {
		if k.Attach && !k.field(&s).zero() {
			out = append(out, "--"+k.Flag)
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
	case optDurationValue:
		if *v.p == nil {
			return nil // the default
		}
		n = int64(**v.p)
		show = func(x int64) string { return time.Duration(x).String() }
	case intValue:
		n = int64(*v.p)
	case bytesValue:
		if *v.p == nil {
			return nil // the default
		}
		n = int64(min(**v.p, math.MaxInt64))
		show = func(x int64) string { return FormatBytes(uint64(x)) }
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
