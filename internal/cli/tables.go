package cli

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/resources"
	"github.com/fencecheck/fencecheck/internal/resources/lockstore"
	"github.com/fencecheck/fencecheck/internal/resources/postgres"
	"github.com/fencecheck/fencecheck/internal/resources/proxy"
	"github.com/fencecheck/fencecheck/internal/targets/consul"
	"github.com/fencecheck/fencecheck/internal/targets/etcd"
	"github.com/fencecheck/fencecheck/internal/targets/redis"
	"github.com/fencecheck/fencecheck/internal/targets/redis/redlock"
	"github.com/fencecheck/fencecheck/internal/targets/redis/sentinel"
	"github.com/fencecheck/fencecheck/internal/targets/zookeeper"
	"github.com/fencecheck/fencecheck/internal/workloads"
	"github.com/fencecheck/fencecheck/internal/workloads/election"
	"github.com/fencecheck/fencecheck/internal/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/workloads/register"
	"github.com/fencecheck/fencecheck/targets"
)

// The axes of a run, one table each. Adding a target, a resource or a
// workload is one folder and one line here.

// targetTable lists every target --target can name.
var targetTable = []targets.Target{
	etcd.Target{},
	consul.Target{},
	redis.Target{},
	redis.Target{NoPersistence: true},
	sentinel.Target{},
	redlock.Target{},
	zookeeper.Target{},
}

// builtinTargets are the targets of targetTable before any user recipe is
// added (Run).
var builtinTargets = targetTable

// resourceTable lists every resource --resource can name; the first is the
// default.
var resourceTable = []resources.Resource{
	lockstore.Resource{},
	postgres.Resource{},
	proxy.Resource{},
	proxy.Resource{Volatile: true},
}

// workloadTable lists every workload --workload can name; the first is the
// default.
var workloadTable = []workloads.Workload{
	lockappend.Workload{},
	register.Workload{},
	election.Workload{},
}

// catalog finds a run's parts by name in the tables (the worker's).
var catalog = harness.Catalog{Target: lookupTarget, Workload: lookupWorkload, Resource: lookupResource}

type named interface{ Name() string }

func names[T named](table []T) string {
	ns := make([]string, len(table))
	for i, x := range table {
		ns[i] = x.Name()
	}
	return strings.Join(ns, ", ")
}

// lookup returns the entry of table named name, or an error (wrapping
// targets.ErrBadConfig) that lists the valid names.
func lookup[T named](table []T, what, name string) (T, error) {
	for _, x := range table {
		if x.Name() == name {
			return x, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("%w: unknown %s %q (valid: %s)", targets.ErrBadConfig, what, name, names(table))
}

func targetNames() string { return names(targetTable) }

// imageRunnerNames lists the targets that run from a user's image
// (--image target=REF).
func imageRunnerNames() string {
	var ns []string
	for _, t := range targetTable {
		if _, ok := t.(targets.ImageRunner); ok {
			ns = append(ns, t.Name())
		}
	}
	return strings.Join(ns, ", ")
}

// versionNames lists the versions of each target that has several
// ("etcd: 3.6.16, ...; consul: ..."), for the flags' help.
func versionNames() string {
	var parts []string
	for _, t := range targetTable {
		if vt, ok := t.(targets.Versioned); ok {
			parts = append(parts, t.Name()+": "+strings.Join(vt.Versions(), ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// etcdRecipeNames are the etcd target's recipes, for the flags' help.
func etcdRecipeNames() string { return strings.Join(etcd.Target{}.Recipes(), ", ") }
func resourceNames() string   { return names(resourceTable) }
func workloadNames() string   { return names(workloadTable) }

func lookupTarget(name string) (targets.Target, error) { return lookup(targetTable, "target", name) }
func lookupResource(name string) (resources.Resource, error) {
	return lookup(resourceTable, "resource", name)
}
func lookupWorkload(name string) (workloads.Workload, error) {
	return lookup(workloadTable, "workload", name)
}

// lookupResources reads a --resource value: comma-separated resource
// names, in the order a critical section writes them.
func lookupResources(spec string) ([]resources.Resource, error) {
	var out []resources.Resource
	for _, n := range strings.Split(spec, ",") {
		r, err := lookupResource(strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// auditLogger is the resource that keeps --audit-log: the first of the
// table that can.
func auditLogger() resources.AuditLogger {
	for _, r := range resourceTable {
		if a, ok := r.(resources.AuditLogger); ok {
			return a
		}
	}
	return nil
}
