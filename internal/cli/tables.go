package cli

import (
	"strings"

	"github.com/fencecheck/fencecheck/internal/resources"
	"github.com/fencecheck/fencecheck/internal/tables"
	"github.com/fencecheck/fencecheck/internal/worker"
	"github.com/fencecheck/fencecheck/internal/workloads"
	"github.com/fencecheck/fencecheck/targets"
)

// The axes of a run, one table each: internal/tables' (which the worker
// binary reads too), with a Go API user's recipes added to the targets.

// targetTable lists every target --target can name.
var targetTable = tables.Targets

// builtinTargets are the targets of targetTable before any user recipe is
// added (Run).
var builtinTargets = tables.Targets

// resourceTable lists every resource --resource can name; the first is the
// default.
var resourceTable = tables.Resources

// workloadTable lists every workload --workload can name; the first is the
// default.
var workloadTable = tables.Workloads

// catalog finds a run's parts by name in the tables (the worker's, when
// the worker image holds fencecheck itself).
var catalog = worker.Catalog{Target: lookupTarget, Workload: lookupWorkload, Resource: lookupResource}

func names[T tables.Named](table []T) string { return tables.Names(table) }

// lookup returns the entry of table named name, or an error (wrapping
// targets.ErrBadConfig) that lists the valid names.
func lookup[T tables.Named](table []T, what, name string) (T, error) {
	return tables.Lookup(table, what, name)
}

func targetNames() string { return names(targetTable) }

// imageRunnerNames lists the targets that run from a user's image
// (--image target=REF).
func imageRunnerNames() string { return targetsThat[targets.ImageRunner]() }

// targetsThat lists the targets that have capability C (one of the
// targets' optional interfaces: targets.ImageRunner, targets.Attacher),
// in table order: a help that names them follows the table.
func targetsThat[C any]() string {
	var ns []string
	for _, t := range targetTable {
		if _, ok := t.(C); ok {
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

// recipeNames lists the recipes of each target that has several ("etcd:
// mutex, lock-rpc; ..."), for the flags' help.
func recipeNames() string {
	var parts []string
	for _, t := range targetTable {
		if rt, ok := t.(targets.Reciper); ok {
			parts = append(parts, t.Name()+": "+strings.Join(rt.Recipes(), ", "))
		}
	}
	return strings.Join(parts, "; ")
}

func resourceNames() string { return names(resourceTable) }
func workloadNames() string { return names(workloadTable) }

func lookupTarget(name string) (targets.Target, error) { return lookup(targetTable, "target", name) }
func lookupResource(name string) (resources.Resource, error) {
	return lookup(resourceTable, "resource", name)
}
func lookupWorkload(name string) (workloads.Workload, error) {
	return lookup(workloadTable, "workload", name)
}

// lookupResources reads a --resource value (tables.LookupResources).
var lookupResources = tables.LookupResources

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
