package matrix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/tables"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// workloadFencings are the fencing modes the workload takes (nil: any the
// resource offers; the register workload's cells have read modes instead).
func workloadFencings(name string) []targets.Fencing {
	w, err := tables.Lookup(tables.Workloads, "workload", name)
	if err != nil {
		return nil
	}
	if f, ok := w.(workloads.Fenced); ok {
		return f.Fencings()
	}
	return nil
}

// workloadSupports is nil when the workload can run on t
// (workloads.Targeted), else why not.
func workloadSupports(name string, t targets.Target) error {
	w, err := tables.Lookup(tables.Workloads, "workload", name)
	if err != nil {
		return err
	}
	if tw, ok := w.(workloads.Targeted); ok {
		return tw.Supports(t)
	}
	return nil
}

// fencingWords is "none, token or cas".
func fencingWords(fs []targets.Fencing) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// registerModes are the read modes of t's register cells: want, or every
// read mode of t when want is empty; why says what was left out (modes t
// lacks, or all when t has no key-value store).
func registerModes(t targets.Target, want []string) (modes []string, why string) {
	rm, ok := t.(targets.ReadModer)
	if !ok {
		return nil, "the target has no key-value store for registers"
	}
	if len(want) == 0 {
		return rm.ReadModes(), ""
	}
	var lacks []string
	for _, m := range want {
		if slices.Contains(rm.ReadModes(), m) {
			modes = append(modes, m)
		} else {
			lacks = append(lacks, m)
		}
	}
	if len(lacks) > 0 {
		why = fmt.Sprintf("no read mode %s (it has %s)", strings.Join(lacks, ", "), strings.Join(rm.ReadModes(), ", "))
	}
	return modes, why
}

// lacking returns the first resource of rs that does not offer f, if any.
func lacking(rs []resources.Resource, f targets.Fencing) resources.Resource {
	for _, r := range rs {
		if !resources.Offers(r, f) {
			return r
		}
	}
	return nil
}

// clientElsewhere says why a client directory's program is not run on
// target (its client.json names other targets, "target" or "targets"; a
// variant, redis-everysec for redis, is the same service), or "" when it
// is, or when the directory cannot be read (the cell's run then says what
// is wrong with it).
func clientElsewhere(dir, target string) string {
	if dir == "" {
		return ""
	}
	c, err := clientproto.Load(dir, "", "")
	names := c.Manifest.TargetNames()
	if err != nil || len(names) == 0 {
		return ""
	}
	for _, n := range names {
		if n == target || strings.HasPrefix(target, n+"-") {
			return ""
		}
	}
	return fmt.Sprintf("the client %s is written for %s", c.Name(), strings.Join(names, ", "))
}

// axisSetting is one knob's value in one cell.
type axisSetting struct {
	knob  spec.Knob
	value string
}

// axisCombos are the cells' settings of the knob axes that apply to the
// workload (a knob of another workload, spec.Knob.Workload, does not vary
// its cells): their product, in the given order, the last knob varying
// fastest. One empty combination when none applies.
func axisCombos(axes []KnobAxis, workload string) [][]axisSetting {
	combos := [][]axisSetting{nil}
	for _, a := range axes {
		if a.Knob.Workload != "" && a.Knob.Workload != workload {
			continue
		}
		var next [][]axisSetting
		for _, c := range combos {
			for _, v := range a.Values {
				next = append(next, append(append([]axisSetting(nil), c...), axisSetting{a.Knob, v}))
			}
		}
		combos = next
	}
	return combos
}
