package cli

import (
	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/targets"
)

// builtinTargets are the built-in targets, before any user recipe
// (runs.Builtin).
var builtinTargets = runs.Builtin

// parts are this binary's targets, resources and workloads: the built-in
// ones, and a Go API user's targets (Run).
var parts = runs.Parts{Targets: runs.Builtin}

func lookupTarget(name string) (targets.Target, error) { return parts.LookupTarget(name) }

var lookupWorkload = runs.LookupWorkload

func targetNames() string { return parts.TargetNames() }
