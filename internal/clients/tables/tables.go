// Package tables lists the axes of a run, one table each: every built-in
// target, resource and workload, and every kind of record a run keeps.
// Adding one is one folder and one line here. fencecheck's command line (internal/cli) and the worker binary
// (cmd/fencecheck-worker) read the same tables, so a worker knows every
// part a run can name; the tables link no Docker SDK and no report.
package tables

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/clients/worker"
	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/election"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/register"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/consul"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/pgadvisory"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis/redlock"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/redis/sentinel"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/zookeeper"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/systems/resources/lockstore"
	"github.com/fencecheck/fencecheck/internal/systems/resources/postgres"
	"github.com/fencecheck/fencecheck/internal/systems/resources/proxy"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/belief"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/kept"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/leaders"
	"github.com/fencecheck/fencecheck/targets"
)

// Targets lists every built-in target --target can name. The Kubernetes
// targets are kubernetesTargets (kubernetes.go), which a binary built with
// -tags nokubernetes leaves out (nokubernetes.go): client-go's leader
// election links every API group of Kubernetes, half of what a fresh machine
// compiles for fencecheck, which make demo's binary does not need.
var Targets = slices.Concat([]targets.Target{
	etcd.Target{},
	consul.Target{},
	redis.Target{},
	redis.Target{NoPersistence: true},
	redis.Target{Everysec: true},
	sentinel.Target{},
	redlock.Target{},
	zookeeper.Target{},
}, kubernetesTargets, []targets.Target{
	pgadvisory.Target{},
	pgadvisory.Target{Pooling: pgadvisory.PoolTransaction},
	pgadvisory.Target{Pooling: pgadvisory.PoolSession},
})

// Resources lists every resource --resource can name; the first is the
// default.
var Resources = []resources.Resource{
	lockstore.Resource{},
	postgres.Resource{},
	proxy.Resource{},
	proxy.Resource{Volatile: true},
}

// Workloads lists every workload --workload can name; the first is the
// default.
var Workloads = []workloads.Workload{
	lockappend.Workload{},
	register.Workload{},
	election.Workload{},
}

// Records lists every kind of record a run keeps beside its history
// (internal/base/record), in results.json's order; they are registered when
// this package is initialized, so whatever reads results.json through
// these tables reads them.
var Records = []record.Kind{
	leaders.Kind,
	kept.Kind,
	belief.Kind,
}

func init() { record.Register(Records...) }

// Named is an entry of a table.
type Named interface{ Name() string }

// Names is the names of a table's entries, comma-separated.
func Names[T Named](table []T) string {
	ns := make([]string, len(table))
	for i, x := range table {
		ns[i] = x.Name()
	}
	return strings.Join(ns, ", ")
}

// Lookup returns the entry of table named name, or an error (wrapping
// targets.ErrBadConfig) that lists the valid names; what names the table
// ("target").
func Lookup[T Named](table []T, what, name string) (T, error) {
	for _, x := range table {
		if x.Name() == name {
			return x, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("%w: unknown %s %q (valid: %s)", targets.ErrBadConfig, what, name, Names(table))
}

// LookupTarget is Lookup of a target in ts, which says why when name is a
// built-in target this binary was built without (Omitted).
func LookupTarget(ts []targets.Target, name string) (targets.Target, error) {
	if slices.Contains(Omitted, name) && !slices.ContainsFunc(ts, func(t targets.Target) bool { return t.Name() == name }) {
		return nil, fmt.Errorf("%w: target %q is not in this binary: it was built with -tags nokubernetes, as make demo builds bin/demo/fencecheck (make build builds every target; valid here: %s)", targets.ErrBadConfig, name, Names(ts))
	}
	return Lookup(ts, "target", name)
}

// Catalog is a worker's catalog: the targets ts (the built-in ones, and a
// Go API user's recipes), the resources and the workloads.
func Catalog(ts []targets.Target) worker.Catalog {
	return worker.Catalog{
		Target:   func(name string) (targets.Target, error) { return LookupTarget(ts, name) },
		Resource: func(name string) (resources.Resource, error) { return Lookup(Resources, "resource", name) },
		Workload: func(name string) (workloads.Workload, error) { return Lookup(Workloads, "workload", name) },
	}
}

// LookupResources reads a --resource value: comma-separated resource
// names, in the order a critical section writes them.
func LookupResources(spec string) ([]resources.Resource, error) {
	var out []resources.Resource
	for _, n := range strings.Split(spec, ",") {
		r, err := Lookup(Resources, "resource", strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
