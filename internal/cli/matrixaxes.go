package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/campaigns/matrix"
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
)

// knobList is the flag of a matrix.KnobAxis: a comma-separated list, which may
// also be repeated; each value is set on a spec as the knob's own flag
// would (its errors, and its bounds, are the list's: exit 254 at parse
// time), and given once.
type knobList struct {
	matrix.KnobAxis
	def string // the base spec's value ("" when unset)
}

func (l *knobList) String() string {
	if l == nil {
		return ""
	}
	if len(l.Values) == 0 {
		return l.def
	}
	return strings.Join(l.Values, ",")
}

func (l *knobList) Set(s string) error {
	items := spec.SplitList(s)
	if len(items) == 0 {
		return fmt.Errorf("empty list")
	}
	for _, item := range items {
		v, err := axisValue(l.Knob, item)
		if err != nil {
			return err
		}
		for _, had := range l.Values {
			if had == v {
				return fmt.Errorf("%s given twice", v)
			}
		}
		l.Values = append(l.Values, v)
	}
	return nil
}

// axisValue is one value of a knob's list, checked: it sets a spec as the
// knob's flag does and, when it is not zero (the default, as in run), lies
// within the knob's bounds. It returns the value as the knob writes it.
func axisValue(k spec.Knob, item string) (string, error) {
	sp := spec.Default()
	v := k.Value(&sp)
	if err := v.Set(item); err != nil {
		return "", fmt.Errorf("%q: %w", item, err)
	}
	if !k.IsZero(&sp) {
		if err := k.CheckBound(&sp); err != nil {
			return "", fmt.Errorf("%q: %w", item, err)
		}
	}
	return v.String(), nil
}

// boolKnobList is a knobList of a boolean knob: given alone (--side-writer)
// it is true; --side-writer=false,true is two cells.
type boolKnobList struct{ *knobList }

func (boolKnobList) IsBoolFlag() bool { return true }

// isListAxis says whether matrix takes the knob as a knobList: a knob
// declared an axis (spec.Knob.Axis) that is not one of matrix's own axes
// (target, version, fencing, resource, nemesis; workload and read-mode,
// which make register and election cells, matrix splits itself).
func isListAxis(k spec.Knob) bool {
	if !k.Axis || matrixOwn(k) {
		return false
	}
	switch k.Flag {
	case "workload", "read-mode":
		return false
	}
	return true
}

// addMatrixRunFlags adds to fs the run knobs matrix takes as run does
// (matrixKnob) and a knobList for each knob it varies besides its own axes
// (isListAxis), with the defaults of spec.Default.
func addMatrixRunFlags(fs *flag.FlagSet) (*runs.Flags, []*knobList) {
	o := parts.AddFlags(fs, matrixKnob)
	choices := parts.Choices()
	var lists []*knobList
	for _, k := range spec.Knobs {
		if !isListAxis(k) {
			continue
		}
		l := &knobList{KnobAxis: matrix.KnobAxis{Knob: k}}
		if !k.IsZero(&o.Spec) {
			l.def = k.Value(&o.Spec).String()
		}
		help := k.Help
		if c := choices[k.Choices]; c != "" {
			help += ": " + c
		}
		var fv flag.Value = l
		if b, ok := k.Value(&o.Spec).(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			fv = boolKnobList{l}
			help += "; --" + k.Flag + "=false,true: a cell each"
		} else {
			help += "; comma-separated or repeated: a cell each"
		}
		if k.Workload != "" {
			help += " (" + k.Workload + " cells only)"
		}
		fs.Var(fv, k.Flag, help)
		lists = append(lists, l)
	}
	return o, lists
}

// knobAxes are the lists given (each knobList with a value).
func knobAxes(lists []*knobList) []matrix.KnobAxis {
	var out []matrix.KnobAxis
	for _, l := range lists {
		if len(l.Values) > 0 {
			out = append(out, l.KnobAxis)
		}
	}
	return out
}
