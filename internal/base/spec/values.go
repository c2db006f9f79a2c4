package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// value is a knob's field as a flag (flag.Value) and as JSON. set reads
// what a flag gives, text is what Args and Rows print, js is the JSON
// value (nil: left out), unjs reads it back (older test.json files are
// read too: a duration is "2s", a count a number).
type value interface {
	String() string
	Set(string) error
	zero() bool
	reset() // to the zero value
	js() any
	unjs(json.RawMessage) error
}

type durationValue struct{ p *time.Duration }

func (v durationValue) String() string {
	if v.p == nil || *v.p == 0 {
		return "0s"
	}
	return v.p.String()
}
func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not a duration (such as 2s, 500ms, 1m30s)")
	}
	*v.p = d
	return nil
}
func (v durationValue) zero() bool { return *v.p == 0 }
func (v durationValue) js() any    { return v.p.String() }
func (v durationValue) unjs(raw json.RawMessage) error {
	return unjsText(raw, v.Set, func() { *v.p = 0 })
}

// unjsText reads a JSON string with set, or unset for "".
func unjsText(raw json.RawMessage, set func(string) error, unset func()) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	if s == "" {
		unset()
		return nil
	}
	return set(s)
}

// optDurationValue is a duration that can be left unset (nil).
type optDurationValue struct{ p **time.Duration }

func (v optDurationValue) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return (*v.p).String()
}
func (v optDurationValue) Set(s string) error {
	var d time.Duration
	if err := (durationValue{&d}).Set(s); err != nil {
		return err
	}
	*v.p = &d
	return nil
}
func (v optDurationValue) zero() bool { return *v.p == nil }
func (v optDurationValue) js() any    { return (*v.p).String() }
func (v optDurationValue) unjs(raw json.RawMessage) error {
	return unjsText(raw, v.Set, func() { *v.p = nil })
}

type intValue struct{ p *int }

func (v intValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}
func (v intValue) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 0, 0)
	if err != nil {
		return fmt.Errorf("not a whole number")
	}
	*v.p = int(n)
	return nil
}
func (v intValue) zero() bool                        { return *v.p == 0 }
func (v intValue) js() any                           { return *v.p }
func (v intValue) unjs(raw json.RawMessage) error    { return json.Unmarshal(raw, v.p) }
func (v uint64Value) unjs(raw json.RawMessage) error { return json.Unmarshal(raw, v.p) }

type uint64Value struct{ p *uint64 }

func (v uint64Value) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatUint(*v.p, 10)
}
func (v uint64Value) Set(s string) error {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 0, 64)
	if err != nil {
		return fmt.Errorf("not a whole number of at least 0")
	}
	*v.p = n
	return nil
}
func (v uint64Value) zero() bool { return *v.p == 0 }
func (v uint64Value) js() any    { return *v.p }

type boolValue struct{ p *bool }

func (v boolValue) String() string {
	if v.p == nil {
		return "false"
	}
	return strconv.FormatBool(*v.p)
}
func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	*v.p = b
	return nil
}
func (v boolValue) IsBoolFlag() bool                 { return true }
func (v boolValue) zero() bool                       { return !*v.p }
func (v boolValue) js() any                          { return *v.p }
func (v boolValue) unjs(raw json.RawMessage) error   { return json.Unmarshal(raw, v.p) }
func (v stringValue) unjs(raw json.RawMessage) error { return json.Unmarshal(raw, v.p) }

type stringValue struct{ p *string }

func (v stringValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}
func (v stringValue) Set(s string) error { *v.p = s; return nil }
func (v stringValue) zero() bool         { return *v.p == "" }
func (v stringValue) js() any            { return *v.p }

// choiceValue is one word of a fixed list.
type choiceValue struct {
	p     *string
	words []string
}

func (v choiceValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}
func (v choiceValue) Set(s string) error {
	if !slices.Contains(v.words, s) {
		return fmt.Errorf("want one of %s, not %q", strings.Join(v.words, ", "), s)
	}
	*v.p = s
	return nil
}
func (v choiceValue) zero() bool { return *v.p == "" }
func (v choiceValue) js() any    { return *v.p }
func (v choiceValue) reset()     { *v.p = "" }
func (v choiceValue) unjs(raw json.RawMessage) error {
	return unjsText(raw, v.Set, v.reset)
}

// clientDirValue is --client-dir: a directory, or "builtin" (the default,
// as the empty string): the target's own recipe, which matrix can list
// beside client directories (--client-dir builtin,DIR).
type clientDirValue struct{ p *string }

// Builtin is --client-dir's value for the target's own recipe.
const Builtin = "builtin"

func (v clientDirValue) String() string {
	if v.p == nil || *v.p == "" {
		return Builtin
	}
	return *v.p
}

func (v clientDirValue) Set(s string) error {
	if s == Builtin {
		s = ""
	}
	*v.p = s
	return nil
}

func (v clientDirValue) zero() bool                     { return *v.p == "" }
func (v clientDirValue) js() any                        { return *v.p }
func (v clientDirValue) reset()                         { *v.p = "" }
func (v clientDirValue) unjs(raw json.RawMessage) error { return json.Unmarshal(raw, v.p) }

// listValue is a comma-separated list; each Set replaces it.
type listValue struct{ p *[]string }

func (v listValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}
func (v listValue) Set(s string) error {
	*v.p = SplitList(s)
	return nil
}

// SplitList splits a comma-separated flag value, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
func (v listValue) zero() bool { return len(*v.p) == 0 }
func (v listValue) js() any    { return v.String() }
func (v listValue) unjs(raw json.RawMessage) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	return v.Set(s)
}

// mapValue is KIND=VALUE,..., repeatable; check, if not nil, vets each
// pair as it is set.
type mapValue struct {
	p     *map[string]string
	check func(one, kind, ref string, m map[string]string) error
}

func (v mapValue) String() string {
	if v.p == nil {
		return ""
	}
	var parts []string
	for k, x := range *v.p {
		parts = append(parts, k+"="+x)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
func (v mapValue) Set(s string) error {
	if *v.p == nil {
		*v.p = map[string]string{}
	}
	for _, one := range strings.Split(s, ",") {
		k, x, _ := strings.Cut(strings.TrimSpace(one), "=")
		if v.check != nil {
			if err := v.check(one, k, x, *v.p); err != nil {
				return err
			}
		}
		(*v.p)[k] = x
	}
	return nil
}
func (v mapValue) zero() bool { return len(*v.p) == 0 }
func (v mapValue) js() any    { return *v.p }
func (v mapValue) unjs(raw json.RawMessage) error {
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	*v.p = m
	return nil
}

// bytesValue is a size in bytes that can be left unset (nil): an integer
// or a decimal number with a unit (see ParseBytes).
type bytesValue struct{ p **uint64 }

func (v bytesValue) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return FormatBytes(**v.p)
}
func (v bytesValue) Set(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*v.p = &n
	return nil
}
func (v bytesValue) zero() bool { return *v.p == nil }
func (v bytesValue) js() any    { return **v.p }
func (v bytesValue) unjs(raw json.RawMessage) error {
	var n uint64
	if err := json.Unmarshal(raw, &n); err != nil {
		return err
	}
	*v.p = &n
	return nil
}

var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// ParseBytes reads a size: an integer or a decimal number with a unit,
// binary (KiB, MiB, GiB, TiB) or decimal (kB, MB, GB, TB; K, M, G and T are
// binary), as in "6GiB", "1.5 GB", "512MiB", "1000000".
func ParseBytes(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := byteUnits[unit]
	if !ok || num == "" {
		return 0, fmt.Errorf("size %q: want a number of bytes with a unit, such as 6GiB or 512MiB (0: no limit)", s)
	}
	if !strings.Contains(num, ".") && mult == 1 {
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("size %q: too large", s)
		}
		return n, nil
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: want a number of bytes with a unit, such as 6GiB or 512MiB (0: no limit)", s)
	}
	if v *= mult; v >= math.MaxUint64 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return uint64(v), nil
}

// FormatBytes is n with a binary unit when it is a whole number of one
// ("6GiB"), else in bytes.
func FormatBytes(n uint64) string {
	for _, u := range []struct {
		s string
		m uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.FormatUint(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatUint(n, 10)
}

func (v durationValue) reset()    { *v.p = 0 }
func (v optDurationValue) reset() { *v.p = nil }
func (v intValue) reset()         { *v.p = 0 }
func (v uint64Value) reset()      { *v.p = 0 }
func (v boolValue) reset()        { *v.p = false }
func (v stringValue) reset()      { *v.p = "" }
func (v listValue) reset()        { *v.p = nil }
func (v mapValue) reset()         { *v.p = nil }
func (v bytesValue) reset()       { *v.p = nil }
