package nemesis

import (
	"errors"
	"fmt"
	"strings"
)

// Shape is what a run is, as known before anything starts: what a fault's
// precondition is checked against (Precondition).
type Shape struct {
	// Target is the target's name, for messages.
	Target string
	// Servers is how many server nodes the run starts (Env.Servers, a
	// Sentinel counted as a server).
	Servers int
	// Tiers counts the servers of each tier, in a target with servers of
	// more than one kind (nil otherwise): what a SCOPE@TIER picks from.
	Tiers map[string]int
	// LeaderTier is the tier of the server Env.Leader names (a tiered
	// target's LeaderTier): leader@TIER of another tier cannot apply.
	LeaderTier string
	// Resources are the names of the run's resources, the audit log's
	// included; Containers the ones among them that run containers of
	// their own (Env.Resources: what a :resource scope hits).
	Resources  []string
	Containers []string
	// ProcessClock is nil when the clocks of a node's processes can be skewed
	// (the harness's vDSO patch), else why it cannot.
	ProcessClock error
	// Disk is nil when this harness can mount lazy disks (Disks), else
	// why it cannot. ServerData says whether every server names a data
	// directory (targets.NodeSpec.DataDir); DataContainers are the
	// resources among Containers whose container does.
	Disk           error
	ServerData     bool
	DataContainers []string
	// Foreign, when not empty, says that the servers are not fencecheck's
	// (a run attached to existing servers: --endpoints), and so why no
	// fault may act on them: only faults on the client side apply.
	Foreign string
}

// Precondition is a fault that cannot apply to every run: one whose scope
// needs a resource container, a number of servers or a clock path that a
// run may lack. Faults that apply to any run do not implement it.
type Precondition interface {
	Fault
	// Applies returns nil when the fault can be injected into a run of
	// shape s, else why not, as an error wrapping ErrCannotApply. It looks
	// at s only, so it runs before any container exists.
	Applies(s Shape) error
}

// ErrCannotApply: a fault that cannot be injected into the run at all (it
// would fail at every injection).
var ErrCannotApply = errors.New("cannot apply to this run")

// CheckApplies checks each fault's precondition (Precondition) against s
// and returns every fault that cannot apply, each named as --nemesis names
// it, with why; nil when all can.
func CheckApplies(faults []Fault, s Shape) error {
	var errs []error
	for _, f := range faults {
		if p, ok := f.(Precondition); ok {
			if err := p.Applies(s); err != nil {
				errs = append(errs, fmt.Errorf("--nemesis %s: %w", f.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// cannotApply is an error wrapping ErrCannotApply.
func cannotApply(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCannotApply}, args...)...)
}

// needServers says why a run of shape s cannot have a fault that needs at
// least n servers (nil when it can).
func needServers(s Shape, n int, what string) error {
	if s.Servers >= n {
		return nil
	}
	return cannotApply("%s needs %d servers; this %s run has %d (--nodes)", what, n, s.Target, s.Servers)
}

// ownServers says why a fault that acts on the servers themselves (pauses,
// kills, cuts, slows or skews them) cannot apply to a run of shape s:
// they are not fencecheck's (Shape.Foreign). nil when they are.
func ownServers(s Shape) error {
	if s.Foreign == "" {
		return nil
	}
	return cannotApply("it acts on the servers, and %s", s.Foreign)
}

// needContainer says why a run of shape s cannot have a :resource fault:
// none of its resources runs a container of its own (nil when one does).
func needContainer(s Shape) error {
	if len(s.Containers) > 0 {
		return nil
	}
	return cannotApply("the :resource scope hits a resource's own container, and the run's resources (%s) have none: they live in the lock service (use --resource postgres or proxy)",
		strings.Join(s.Resources, ", "))
}

// needDisk says why a run of shape s cannot have a disk fault on the
// servers (resource false) or on the resource's container (nil when it
// can).
func needDisk(s Shape, resource bool) error {
	if s.Disk != nil {
		return cannotApply("%v", s.Disk)
	}
	if resource {
		if err := needContainer(s); err != nil {
			return err
		}
		if len(s.DataContainers) == 0 {
			return cannotApply("the resource's container (%s) names no data directory for a disk fault", strings.Join(s.Containers, ", "))
		}
		return nil
	}
	if !s.ServerData {
		return cannotApply("the servers of target %s name no data directory for a disk fault", s.Target)
	}
	return nil
}
