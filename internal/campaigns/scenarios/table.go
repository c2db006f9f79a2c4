package scenarios

import (
	"context"

	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// The scripts' names. A story's run directory is SCRIPT-FENCING, where
// SCRIPT is Config.Script: the demos' is "demo" (demo-none, demo-token;
// with --election demo-none, demo-term), a scenario's its name.
const (
	DemoName      = "demo"
	ElectionName  = "election"
	Etcd11456Name = "etcd-11456"
)

// DemoScript is a demo: one story per fencing mode, each of which must
// show what the story claims (Story.Shows).
type DemoScript struct {
	Name, About string
	// Fencings are the stories it tells, in order.
	Fencings []targets.Fencing
	Play     func(context.Context, Config) ([]Story, error)
}

// Demos lists the demos (fencecheck demo; --election the second).
var Demos = []DemoScript{
	{Name: DemoName, Fencings: []targets.Fencing{targets.FencingNone, targets.FencingToken}, Play: Demo,
		About: "a holder frozen past its lease writes after its successor: unfenced B's update is lost, token-fenced A's write is rejected"},
	{Name: ElectionName, Fencings: []targets.Fencing{targets.FencingNone, targets.FencingTerm}, Play: ElectionDemo,
		About: "a leader partitioned during an election appends an entry of its old term: unfenced the log forks, term-fenced it refuses"},
}

// Scenario is a regression scenario: one known bug, the target and
// recipe it needs, and the script that plays it once with a fencing mode.
type Scenario struct {
	Name, Target, Recipe, About string
	Play                        func(context.Context, Config, targets.Fencing) (Regression, error)
}

// Regressions lists the regression scenarios (run --scenario).
var Regressions = []Scenario{
	{Name: Etcd11456Name, Target: "etcd", Recipe: etcd.RecipeLockRPC, Play: Etcd11456,
		About: "etcd#11456: the lock RPC grants the lock to a waiter whose lease expired while it waited (3.4.3: invalid unfenced; fixed servers: valid)"},
}

// Regression is what a regression scenario showed.
type Regression struct {
	// Granted: the lock service granted the lock to the waiter whose lease
	// had expired while it waited (the bug).
	Granted bool
	// Final is the list's final value; Valid the checkers' verdict.
	Final []int64
	Valid checkers.Validity
	Run   *store.Run
}
