package cli

import (
	"github.com/fencecheck/fencecheck/internal/runs"
	"github.com/fencecheck/fencecheck/internal/tables"
	"github.com/fencecheck/fencecheck/targets"
)

// The axes of a run, one table each: internal/tables' (which the worker
// binary reads too), with a Go API user's recipes added to the targets
// (Run).

// builtinTargets are the built-in targets, before any user recipe.
var builtinTargets = tables.Targets

// parts are this binary's targets, resources and workloads.
var parts = runs.Parts{Targets: tables.Targets}

func lookupTarget(name string) (targets.Target, error) { return parts.LookupTarget(name) }

var lookupWorkload = runs.LookupWorkload

func targetNames() string { return parts.TargetNames() }
