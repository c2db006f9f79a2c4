package harness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/fencecheck/fencecheck/internal/clients/workloads"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// Validate checks the configuration before anything starts, in one place:
// it asks each part of the run what it supports, in this order (the first
// error is the one reported): that there is a target and a workload;
// the resources, their fencing modes (resources.ParseFencings); the
// knobs' bounds; the workload, whether it runs on this target and these
// resources (Workload.Validate) and has a side writer
// (workloads.SideWriting); where the run goes; the target, whether it can
// attach to --endpoints (targets.Attacher: attached once, here); the
// faults, whether each applies to the run's shape (nemesis.Precondition);
// the target's recipe and client configuration (Target.Validate); and,
// last, whether the client program can run with the resources' fencing
// modes (a program whose client.json says its grants carry no token
// cannot run under token fencing: clientproto.ErrNoTokens, which a
// matrix records as a refused cell, its other checks passed).
// StartCluster checks nothing of it again. Errors wrap
// targets.ErrBadConfig.
func (c *Config) Validate() error {
	for _, check := range []func() error{
		c.checkParts, c.checkResources, c.checkKnobs, c.checkWorkload,
		c.checkPlace, c.validateAttached, c.checkFaults, c.checkTarget, c.checkClientFencing,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// bad is an error of the configuration (targets.ErrBadConfig).
func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{targets.ErrBadConfig}, args...)...)
}

// checkParts checks that the run has a target and a workload.
func (c *Config) checkParts() error {
	if c.Target == nil {
		return bad("no target")
	}
	if c.Workload == nil {
		return bad("no workload")
	}
	return nil
}

// checkClientFencing asks the client program, by what its client.json
// declares, whether it can run with the resources' fencing modes.
func (c *Config) checkClientFencing() error {
	if c.ClientProgram == nil {
		return nil
	}
	return c.ClientProgram.CheckFencing(c.Fencing, c.Fencings)
}

// checkResources checks the resources, each named once, and asks them
// for the fencing modes --fencing gives them (Fencings).
func (c *Config) checkResources() error {
	if len(c.Resources) == 0 {
		return bad("no resource")
	}
	seen := map[string]bool{}
	for _, r := range c.Resources {
		if seen[r.Name()] {
			return bad("--resource names %s twice", r.Name())
		}
		seen[r.Name()] = true
	}
	fs, err := resources.ParseFencings(c.Fencing, c.Resources)
	if err != nil {
		return err
	}
	c.Fencings = fs
	return nil
}

// checkKnobs checks the knobs' bounds (spec.Spec.CheckBounds) and the
// margin within the TTL.
func (c *Config) checkKnobs() error {
	// The TTL comes before the durations derived from it (5 leases,
	// ...): when it is absurd they overflow, and must not take the blame.
	if err := c.Spec.CheckBounds(); err != nil {
		return fmt.Errorf("%w: %w", targets.ErrBadConfig, err)
	}
	if c.Margin < 0 || c.Margin >= c.TTL {
		return bad("--margin %s must be in [0, --ttl %s)", c.Margin, c.TTL)
	}
	return nil
}

// checkWorkload asks the workload whether it runs on the target and the
// resources with these knobs, and whether it has a side writer.
func (c *Config) checkWorkload() error {
	if err := c.Workload.Validate(c.Target, c.Resources, c.WorkloadConfig()); err != nil {
		return err
	}
	if _, ok := c.Workload.(workloads.SideWriting); c.SideWriter && !ok {
		return bad("--side-writer: the %s workload has no side writer", c.Workload.Name())
	}
	return nil
}

// checkPlace checks the run's name and results directory.
func (c *Config) checkPlace() error {
	if err := store.ValidName(c.Name); err != nil {
		return bad("--name: %w", err)
	}
	if err := validResults(c.Results); err != nil {
		return bad("--results %s: %w", c.Results, err)
	}
	return nil
}

// ImageKinds are the kinds of fencecheck's own images this run uses
// (ClusterConfig.ImageKinds, of the target's nodes: none when attached to
// --endpoints), built or not: what matrix --images lists for a CI cache of
// exactly the images its cells need.
func (c *Config) ImageKinds() ([]string, error) {
	var specs []targets.NodeSpec
	if !c.Attached() {
		var err error
		if specs, err = c.Target.Nodes(c.Nodes); err != nil {
			return nil, err
		}
	}
	return c.clusterConfig("", "", nil).ImageKinds(specs), nil
}

// checkFaults asks every fault whether it applies to this run: one that
// cannot would fail at each injection, after the cluster is up.
func (c *Config) checkFaults() error {
	var specs []targets.NodeSpec
	if !c.Attached() {
		var err error
		if specs, err = c.Target.Nodes(c.Nodes); err != nil {
			return err
		}
	}
	if err := nemesis.CheckApplies(c.Faults, c.faultShape(specs)); err != nil {
		return fmt.Errorf("%w: %w", targets.ErrBadConfig, err)
	}
	return nil
}

// checkTarget asks the target whether it takes the lock-delay, the recipe
// and the client configuration.
func (c *Config) checkTarget() error {
	if c.LockDelay != nil && *c.LockDelay < 0 {
		return bad("--lock-delay must not be negative")
	}
	if err := targets.CheckRecipe(c.Target, c.Recipe); err != nil {
		return err
	}
	return c.Target.Validate(c.clientConfig())
}

// validResults checks that the results directory is one, or can be made:
// what exists of its path is made of directories.
func validResults(dir string) error {
	if dir == "" {
		return errors.New("empty")
	}
	for p := dir; ; {
		st, err := os.Stat(p)
		switch {
		case err == nil && !st.IsDir() && p == dir:
			return errors.New("is not a directory")
		case err == nil && !st.IsDir():
			return fmt.Errorf("%s is not a directory", p)
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
	}
}
