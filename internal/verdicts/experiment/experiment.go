// Package experiment reads experiment files: `fencecheck run -f FILE` and
// `fencecheck matrix -f FILE`. A file is a YAML (or JSON) mapping whose
// fields are the knobs of spec.Knobs, each under its test.json key
// (spec.Knob.FileKey); in a matrix file a knob that a matrix varies
// (spec.Knob.Axis) may be a list, one cell each. A stored run's test.json
// is a run file: the keys a run records besides its knobs (store.Found's)
// are accepted, and such a file reads as `fencecheck rerun` reads it
// (rerun.Spec), which reads test.json through this package too.
//
// Every error names the file, the line and the field: an unknown field, a
// value of the wrong type or out of the knob's bounds, a list where one
// value goes, a secret (--auth) in a file.
package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/verdicts/rerun"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// MaxSize bounds a file: a test.json is a few kilobytes.
const MaxSize = 1 << 20

// ErrFile marks a bad experiment file (the CLI exits 254); its message
// is the error's own.
var ErrFile = errors.New("bad experiment file")

type fileError struct{ err error }

func (e fileError) Error() string   { return e.err.Error() }
func (e fileError) Unwrap() error   { return e.err }
func (e fileError) Is(t error) bool { return t == ErrFile }

// Kind is what a file is read as.
type Kind int

const (
	// Run: a run file (run -f): one value a knob; a stored run's
	// test.json is one.
	Run Kind = iota
	// Matrix: a matrix file (matrix -f): an axis knob may be a list.
	Matrix
	// Stored: a stored run's test.json (rerun), read as one whatever
	// keys it holds.
	Stored
)

// Field is one knob a file sets.
type Field struct {
	Knob spec.Knob
	Line int // of its key, from 1
	// Values are the knob's values as its flag takes them: one, or, for
	// a list (List: an axis of a matrix file), one a cell.
	Values []string
	List   bool
}

// File is an experiment file, read and checked.
type File struct {
	Name   string  // the path it was read from
	Fields []Field // the knobs it sets, in the file's order
	// Stored: the file holds keys a run records besides its knobs
	// (store.Found's: run_id, started, servers, ...): a stored run's
	// test.json, Test as store decodes it.
	Stored bool
	Test   store.TestInfo
	// Schedule, if not nil, is the file's "schedule": the faults a run
	// replays, in order, instead of drawing them (as rerun replays a
	// stored run's); empty, none. StepLines are the line of each step.
	Schedule  []history.FaultStep
	StepLines []int
}

// ScheduleKey is the field of a run file that lists a fault schedule to
// replay (shrink writes one): not a knob, and a run file's only.
const ScheduleKey = "schedule"

// MaxSteps bounds a schedule: a run injects one fault at a time, each
// held and healed, so a few hundred fill an hour.
const MaxSteps = 10_000

// Read reads and checks the file at path.
func Read(path string, kind Kind) (*File, error) {
	b, err := store.ReadRegular(path, MaxSize)
	if errors.Is(err, store.ErrTooLarge) {
		return nil, fileError{fmt.Errorf("%w: an experiment file is at most %d bytes", err, MaxSize)}
	}
	if err != nil {
		return nil, fileError{err}
	}
	return Parse(b, path, kind)
}

// Parse reads and checks a file's content; name is what errors call it.
func Parse(b []byte, name string, kind Kind) (*File, error) {
	f := &File{Name: name, Stored: kind == Stored}
	if len(b) > MaxSize {
		return nil, f.Errorf(0, "", "%d bytes: an experiment file is at most %d", len(b), MaxSize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, f.Errorf(0, "", "empty: want a mapping of fields (docs/experiments.md)")
		}
		return nil, f.Errorf(0, "", "not YAML or JSON: %v", err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); err != io.EOF {
		return nil, f.Errorf(more.Line, "", "a second document: a file is one mapping of fields")
	}
	root := doc.Content[0]
	if n := alias(root, 0); n != nil {
		return nil, f.Errorf(n.Line, "", "an alias or a nesting deeper than %d: a file's fields are plain values", maxDepth)
	}
	if root.Kind != yaml.MappingNode {
		return nil, f.Errorf(root.Line, "", "want a mapping of fields (docs/experiments.md), not %s", kindWords(root))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		if key.Kind != yaml.ScalarNode || key.Tag != "!!str" {
			return nil, f.Errorf(key.Line, "", "a field's name is a string, not %s", kindWords(key))
		}
		if prev, dup := seen[key.Value]; dup {
			return nil, f.Errorf(key.Line, key.Value, "given twice (first on line %d)", prev)
		}
		seen[key.Value] = key.Line
		if k, first := dupKey(val); k != nil {
			// YAML and encoding/json would keep the last silently.
			return nil, f.Errorf(k.Line, key.Value, "%s given twice (first on line %d)", show(k), first)
		}
		if err := f.field(key, val, kind == Matrix); err != nil {
			return nil, err
		}
	}
	if f.Stored {
		// A stored run reads as rerun reads it: store's one decoder of
		// test.json, this version's and earlier ones'.
		js, err := json.Marshal(toAny(root))
		if err == nil {
			err = json.Unmarshal(js, &f.Test)
		}
		if err != nil {
			return nil, f.Errorf(0, "", "as test.json: %v", err)
		}
	}
	return f, nil
}

// field checks one key and its value, and records it.
func (f *File) field(key, val *yaml.Node, matrix bool) error {
	if key.Value == ScheduleKey {
		return f.schedule(key, val, matrix)
	}
	k, isKnob := KnobOf(key.Value)
	recorded := recordedKeys[key.Value]
	switch {
	case isKnob && k.File == spec.FileNever && k.Secret:
		return f.Errorf(key.Line, key.Value, "a secret is never read from a file (a file is shown, kept and shared): give --%s on the command line, or the path of a file holding it as auth_file", k.Flag)
	case isKnob && k.File == spec.FileNever:
		return f.Errorf(key.Line, key.Value, "never taken from a file (a file may come from someone else, and a client program's build step runs on this machine): give --%s on the command line", k.Flag)
	case isKnob && recorded && !matrix && val.Kind == yaml.ScalarNode && val.Tag == "!!str":
		// test.json's own form of the knob (audit_log: the audit log's
		// resource): the knob is on.
		f.add(key, k, []string{"true"}, false)
		return nil
	case isKnob && matrix && !matrixTakes(k):
		return f.Errorf(key.Line, key.Value, "not a matrix's: matrix names each cell itself")
	case isKnob:
	case recorded && matrix:
		return f.Errorf(key.Line, key.Value, "what a stored run recorded, not a setting: a matrix file takes the knobs only (docs/experiments.md)")
	case recorded:
		f.Stored = true
		return nil
	default:
		return f.Errorf(key.Line, key.Value, "unknown field%s (the fields are the knobs' test.json keys: docs/experiments.md)", suggest(key.Value))
	}
	if val.Tag == "!!null" {
		return nil // unset, as in test.json
	}
	var nodes []*yaml.Node
	list := val.Kind == yaml.SequenceNode
	switch {
	case list && !matrix:
		return f.Errorf(key.Line, key.Value, "a list is a matrix's axis (matrix -f); a run takes one value")
	case list && !k.Axis:
		return f.Errorf(key.Line, key.Value, "not an axis: a matrix takes one value of it, not a list (the axes: %s)", strings.Join(axisKeys(), ", "))
	case list && len(val.Content) == 0:
		return f.Errorf(key.Line, key.Value, "an empty list")
	case list:
		for _, n := range val.Content {
			nodes = append(nodes, n)
		}
	default:
		nodes = []*yaml.Node{val}
	}
	var values []string
	for _, n := range nodes {
		v, err := text(k, n)
		if err == nil {
			err = check(k, v)
		}
		if err != nil {
			return f.Errorf(n.Line, key.Value, "%s is not a value of --%s: %v", show(n), k.Flag, err)
		}
		values = append(values, v)
	}
	f.add(key, k, values, list)
	return nil
}

// schedule reads the "schedule" field: a list of steps (history.FaultStep's
// JSON form), each checked, the error naming its line.
func (f *File) schedule(key, val *yaml.Node, matrix bool) error {
	switch {
	case matrix:
		return f.Errorf(key.Line, key.Value, "a schedule replays one run's faults (run -f); a matrix draws each cell's")
	case val.Tag == "!!null":
		return nil
	case val.Kind != yaml.SequenceNode:
		return f.Errorf(key.Line, key.Value, "want a list of steps ({fault, after, hold, role, nodes}), not %s", kindWords(val))
	case len(val.Content) > MaxSteps:
		return f.Errorf(key.Line, key.Value, "%d steps: a schedule holds at most %d", len(val.Content), MaxSteps)
	}
	f.Schedule, f.StepLines = []history.FaultStep{}, []int{}
	for i, n := range val.Content {
		if n.Kind != yaml.MappingNode {
			return f.Errorf(n.Line, key.Value, "step %d: want a mapping ({fault, after, hold, role, nodes}), not %s", i+1, kindWords(n))
		}
		var st history.FaultStep
		b, err := json.Marshal(toAny(n))
		if err == nil {
			err = json.Unmarshal(b, &st)
		}
		if err != nil {
			return f.Errorf(n.Line, key.Value, "step %d: %v", i+1, err)
		}
		f.Schedule = append(f.Schedule, st)
		f.StepLines = append(f.StepLines, n.Line)
	}
	return nil
}

func (f *File) add(key *yaml.Node, k spec.Knob, values []string, list bool) {
	f.Fields = append(f.Fields, Field{Knob: k, Line: key.Line, Values: values, List: list})
}

// text is a value node as the knob's flag takes it, checked against the
// knob's type in a file (spec.Knob.Type): a duration is a string ("2s"),
// a count a number.
func text(k spec.Knob, n *yaml.Node) (string, error) {
	typ := k.Type()
	if typ == "map" {
		if n.Kind != yaml.MappingNode {
			return "", fmt.Errorf("want a mapping of KIND: IMAGE")
		}
		var pairs []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			kk, vv := n.Content[i], n.Content[i+1]
			if kk.Tag != "!!str" || vv.Kind != yaml.ScalarNode || vv.Tag != "!!str" || strings.Contains(vv.Value, ",") {
				return "", fmt.Errorf("want a mapping of KIND: IMAGE, each a string")
			}
			pairs = append(pairs, kk.Value+"="+vv.Value)
		}
		return strings.Join(pairs, ","), nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("want %s", typeWords[typ])
	}
	want := map[string][]string{
		"integer": {"!!int"}, "boolean": {"!!bool"}, "size": {"!!int", "!!str"},
	}[typ]
	if want == nil {
		want = []string{"!!str"}
	}
	if !slices.Contains(want, n.Tag) {
		if want[0] == "!!str" && n.Tag != "!!null" {
			// version: 3.6 is a number to YAML.
			return "", fmt.Errorf("want %s: quote it (%q)", typeWords[typ], n.Value)
		}
		return "", fmt.Errorf("want %s", typeWords[typ])
	}
	return n.Value, nil
}

var typeWords = map[string]string{
	"string":   "a string",
	"integer":  "a whole number",
	"boolean":  "true or false",
	"duration": "a duration, a string such as 2s, 500ms or 1m30s",
	"list":     "a string, comma-separated",
	"size":     "a number of bytes, or a string with a unit such as 6GiB",
	"map":      "a mapping of KIND: IMAGE",
}

// check sets v on a Spec as the knob's flag would, and checks the knob's
// bounds: a count's always (as the schema's minimum and maximum), a
// duration's when it is set (0s is the default, as on the command line).
func check(k spec.Knob, v string) error {
	var sp spec.Spec
	if err := k.Value(&sp).Set(v); err != nil {
		return err
	}
	if k.IsZero(&sp) && k.Type() != "integer" {
		return nil
	}
	return k.CheckBound(&sp)
}

// Spec is the run a run file describes, with the command line's knobs
// over it: given is the Spec the command line's flags made (spec.Default
// and the flags), set says which flags it gave. A knob the file does not
// set is given's. A stored run's test.json gives the Spec rerun repeats
// (rerun.Spec: its seed, its derived durations, "none" for a run without
// faults), and what test.json does not record (--results) is given's.
//
// The servers a run attaches to and what its clients present to them
// (spec.Knob.Attach) come from the command line only, never from a file:
// a file, a stored run's above all, may come from someone else, and could
// name any server and any local file. A file that names them asks for
// them: the run needs --endpoints and each credential the file names
// given on the command line (rerun.Attach).
func (f *File) Spec(given spec.Spec, set func(flag string) bool) (spec.Spec, error) {
	sp := given
	if f.Stored {
		s, err := rerun.Spec(f.Test)
		if err != nil {
			return spec.Spec{}, fileError{fmt.Errorf("%s: %w", f.Name, err)}
		}
		for _, k := range spec.Knobs {
			if k.Key == "" && k.IsZero(&s) {
				k.Copy(&s, &given)
			}
		}
		sp = s
	} else {
		for _, fd := range f.Fields {
			if fd.Knob.File == spec.FileAsks && !fd.Knob.Attach {
				continue // the command line's (CheckAsks)
			}
			fd.Knob.Copy(&sp, &spec.Spec{}) // a value replaces the command line's default
			if err := fd.Knob.Value(&sp).Set(strings.Join(fd.Values, ",")); err != nil {
				return spec.Spec{}, f.Errorf(fd.Line, fd.Knob.FileKey(), "%v", err) // checked already
			}
		}
	}
	for _, k := range spec.Knobs {
		if set(k.Flag) && !k.Attach {
			k.Copy(&sp, &given)
		}
	}
	if err := f.CheckAsks(given, set); err != nil {
		return spec.Spec{}, err
	}
	if !f.Stored && !f.has("endpoints") {
		sp.TakeAttach(given) // the file names no servers: the command line's
		return sp, nil
	}
	s, err := rerun.Attach(sp, given)
	if err != nil {
		return spec.Spec{}, fileError{fmt.Errorf("%s: %w", f.Name, err)}
	}
	return s, nil
}

// has says whether the file sets the knob of the flag.
func (f *File) has(flag string) bool {
	return slices.ContainsFunc(f.Fields, func(fd Field) bool { return fd.Knob.Flag == flag })
}

// CheckAsks is nil unless the file names a knob whose value comes from the
// command line only (spec.FileAsks) that the command line does not give:
// the servers a run attaches to or its credentials (spec.Knob.Attach)
// without --endpoints in given, or where results go without --results
// among the flags set gave. The error names the file's first such field
// and its line. A stored run's servers and credentials are left to
// rerun.Attach, which says the same as rerun does.
func (f *File) CheckAsks(given spec.Spec, set func(flag string) bool) error {
	endpoints, _ := KnobOf("endpoints")
	for _, fd := range f.Fields {
		k := fd.Knob
		switch {
		case k.File != spec.FileAsks:
		case k.Attach && !f.Stored && endpoints.IsZero(&given):
			return f.Errorf(fd.Line, k.FileKey(), "the servers a run attaches to and the credentials it presents are never taken from a file (a file may come from someone else): give --endpoints and the credentials (--auth-file, --tls-*) on the command line")
		case !k.Attach && !set(k.Flag):
			return f.Errorf(fd.Line, k.FileKey(), "where results go is never taken from a file (a file may come from someone else, and fencecheck writes there as root): give --%s on the command line", k.Flag)
		}
	}
	return nil
}

// Locate is err, an error about the configuration the file gave, with the
// file's name and the lines of the fields it names (as --FLAG): an
// impossible combination of knobs (--side-writer with the register
// workload) points at the lines to change.
func (f *File) Locate(err error) error {
	if err == nil || f == nil {
		return err
	}
	var where []string
	for _, fd := range f.Fields {
		if flagIn(err.Error(), fd.Knob.Flag) {
			where = append(where, fmt.Sprintf("line %d (%s)", fd.Line, fd.Knob.FileKey()))
		}
	}
	if len(where) == 0 {
		return fmt.Errorf("%s: %w", f.Name, err)
	}
	return fmt.Errorf("%s: %s: %w", f.Name, strings.Join(where, ", "), err)
}

// flagIn says whether s names --flag (not as the start of a longer flag).
func flagIn(s, flag string) bool {
	return regexp.MustCompile(`--` + regexp.QuoteMeta(flag) + `\b([^-]|$)`).MatchString(s)
}

// Errorf is an ErrFile naming the file, the line (0: none) and the field
// ("": none).
func (f *File) Errorf(line int, field, format string, args ...any) error {
	where := f.Name
	if line > 0 {
		where += ":" + strconv.Itoa(line)
	}
	if field != "" {
		where += ": " + field
	}
	return fileError{fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...))}
}

// matrixTakes says whether a matrix file takes the knob: all but --name
// (matrix names each cell itself).
func matrixTakes(k spec.Knob) bool { return k.Flag != "name" }

// KnobOf is the knob whose field in a file is key.
func KnobOf(key string) (spec.Knob, bool) {
	for _, k := range spec.Knobs {
		if k.FileKey() == key {
			return k, true
		}
	}
	return spec.Knob{}, false
}

// recordedKeys are the keys test.json holds besides the knobs' (store.Found's
// JSON names): what a run found, accepted in a run file and read as a
// stored run's.
var recordedKeys = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeOf(store.Found{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
}()

// RecordedKeys are recordedKeys, sorted.
func RecordedKeys() []string {
	var ks []string
	for k := range recordedKeys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func axisKeys() []string {
	var ks []string
	for _, k := range spec.Knobs {
		if k.Axis {
			ks = append(ks, k.FileKey())
		}
	}
	return ks
}

// suggest is ` (did you mean "ttl"?)` for a key that is a knob's flag
// or differs from a field only in case, "-" for "_".
func suggest(key string) string {
	norm := strings.ToLower(strings.ReplaceAll(key, "-", "_"))
	for _, k := range spec.Knobs {
		if k.FileKey() == norm && !k.Secret {
			return fmt.Sprintf(" (did you mean %q?)", k.FileKey())
		}
	}
	return ""
}

// maxDepth bounds a file's nesting (a test.json nests 3 deep).
const maxDepth = 32

// alias is the first alias (*name) under n, or a node nested deeper than
// maxDepth: a file is plain values, and an alias can make a cycle or a
// value that grows exponentially as it is read.
func alias(n *yaml.Node, depth int) *yaml.Node {
	if n.Kind == yaml.AliasNode || depth > maxDepth {
		return n
	}
	for _, c := range n.Content {
		if a := alias(c, depth+1); a != nil {
			return a
		}
	}
	return nil
}

// dupKey is the first key under n given twice in one mapping, and the line
// of its first.
func dupKey(n *yaml.Node) (*yaml.Node, int) {
	if n.Kind == yaml.MappingNode {
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if first, dup := seen[k.Value]; dup {
				return k, first
			}
			seen[k.Value] = k.Line
		}
	}
	for _, c := range n.Content {
		if k, first := dupKey(c); k != nil {
			return k, first
		}
	}
	return nil, 0
}

func kindWords(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return show(n)
}

// show is a scalar as an error quotes it (at most 40 bytes).
func show(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Tag == "!!null":
		return "null"
	case n.Tag == "!!str":
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return strconv.Quote(v)
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return v
}

// toAny is a node as encoding/json takes it.
func toAny(n *yaml.Node) any {
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = toAny(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			l = append(l, toAny(c))
		}
		return l
	}
	switch n.Tag {
	case "!!null":
		return nil
	case "!!bool":
		b, _ := strconv.ParseBool(n.Value)
		return b
	case "!!int":
		if i, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(n.Value, 0, 64); err == nil {
			return u
		}
	case "!!float":
		if x, err := strconv.ParseFloat(n.Value, 64); err == nil {
			return x
		}
	}
	return n.Value
}
