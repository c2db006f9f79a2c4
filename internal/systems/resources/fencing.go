package resources

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/targets"
)

// ParseFencings reads a --fencing value for the resources rs: one mode for
// all ("token"), or a mode per resource ("postgres=token,proxy=none"), in
// which a resource left out is unfenced. Every mode must be one its
// resource offers, and every name one of rs. Errors wrap ErrBadConfig and
// name the valid values.
func ParseFencings(spec string, rs []Resource) (map[string]targets.Fencing, error) {
	out := make(map[string]targets.Fencing, len(rs))
	names := make([]string, len(rs))
	byName := map[string]Resource{}
	for i, r := range rs {
		names[i] = r.Name()
		byName[r.Name()] = r
		out[r.Name()] = targets.FencingNone
	}
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return out, nil
	}
	if !strings.Contains(spec, "=") {
		f, err := targets.ParseFencing(spec)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if !Offers(r, f) {
				return nil, fmt.Errorf("%w: resource %s has no fencing %q (valid: %s)", ErrBadConfig, r.Name(), f, FencingNames(r))
			}
			out[r.Name()] = f
		}
		return out, nil
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		name, mode, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, fmt.Errorf("%w: --fencing %q: give one mode for every resource, or RESOURCE=MODE for each (resources: %s)",
				ErrBadConfig, spec, strings.Join(names, ", "))
		}
		r, known := byName[name]
		if !known {
			return nil, fmt.Errorf("%w: --fencing names resource %q, which is not in the run (resources: %s)",
				ErrBadConfig, name, strings.Join(names, ", "))
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: --fencing names resource %q twice", ErrBadConfig, name)
		}
		seen[name] = true
		f := targets.Fencing(mode)
		if !Offers(r, f) {
			return nil, fmt.Errorf("%w: resource %s has no fencing %q (valid: %s)", ErrBadConfig, name, mode, FencingNames(r))
		}
		out[name] = f
	}
	return out, nil
}

// FencingNames lists r's fencing modes, comma-separated.
func FencingNames(r Resource) string {
	fs := r.Fencings()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// DescribeFencings is the fencing of a run in words: one mode when every
// resource has the same ("token"), else each resource's, in rs's order
// ("postgres=token,proxy=none").
func DescribeFencings(rs []Resource, fs map[string]targets.Fencing) string {
	if len(rs) == 0 {
		return ""
	}
	same := true
	for _, r := range rs {
		same = same && fs[r.Name()] == fs[rs[0].Name()]
	}
	if same {
		return string(fs[rs[0].Name()])
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.Name() + "=" + string(fs[r.Name()])
	}
	return strings.Join(parts, ",")
}
