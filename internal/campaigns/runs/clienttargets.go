package runs

import (
	"slices"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
)

// ClientTargets is matrix's default --target: the targets that the client
// programs in dirs name (client.json's "target" or "targets"), in order,
// each once, so that a program runs on each of its targets; etcd when
// none names one (spec.Builtin, the built-in recipe alone, or programs
// that name none). A directory that cannot be read is left to the cells,
// which say what is wrong with it.
func ClientTargets(dirs []string) []string {
	var ts []string
	for _, d := range dirs {
		if d == spec.Builtin {
			continue
		}
		if p, err := clientproto.Load(d, "", ""); err == nil {
			for _, n := range p.Manifest.TargetNames() {
				if !slices.Contains(ts, n) {
					ts = append(ts, n)
				}
			}
		}
	}
	if len(ts) == 0 {
		return []string{"etcd"}
	}
	return ts
}
