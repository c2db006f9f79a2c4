package nemesis

import (
	"fmt"
	"slices"
)

// table lists every fault --nemesis can name. Adding a fault is one file and
// one row here; a fault that changes a node's network (Network: NetExec,
// Shape) is marked Net (TestNetMarksMatchInjection holds the table to it).
var table = []entry{
	{
		Name:   "pause-holder",
		Doc:    "SIGSTOP the lock holder's client inside its critical section for 1.5-3 leases (:xM: exactly M TTLs), then SIGCONT",
		Scopes: []string{"xM"},
		New:    parsePauseHolder,
	},
	{
		Name: "kill-holder",
		Doc:  "SIGKILL the lock holder's whole client container inside its critical section, keep it down 1-2 leases, restart it (a fresh process continues)",
		New:  noScope(KillHolder{}),
	},
	{
		Name: "pause-client",
		Doc:  "SIGSTOP a random client, whatever it does, for 1.5-3 leases, then SIGCONT",
		New:  noScope(PauseClient{}),
	},
	{
		Name:   "pause-server",
		Doc:    "SIGSTOP server processes (or the resource's: :resource) for 1-3 leases, then SIGCONT",
		Scopes: serverScopes,
		New:    tiered(serverScopes, func(s string) Fault { return PauseServer{Scope: s} }),
	},
	{
		Name:   "kill",
		Doc:    "SIGKILL server processes (or the resource's: :resource), keep them down 1-2 leases, restart them on their data; :SCOPE:lose-unsynced (kill:lose-unsynced: every server) is a power loss: their disks forget what no fsync made durable",
		Scopes: append(slices.Clone(killScopes), LoseUnsynced),
		New:    parseKill,
	},
	{
		Name:   "partition",
		Net:    true,
		Doc:    "partition the servers (a grudge applied as iptables rules in the servers' network namespaces), or cut the resource off from everyone (:resource), for 1-3 leases",
		Scopes: partitionScopes,
		New:    tiered(partitionScopes, func(s string) Fault { return Partition{Scope: s} }),
	},
	{
		Name:   "partition-client",
		Net:    true,
		Doc:    "cut the lock holder off from every server inside its critical section for 1.5-3 leases: every packet silently (:both), only what it sends (:requests) or receives (:replies: its requests land, no answer comes), or with TCP resets (:reset)",
		Scopes: cutModes,
		New:    parsePartitionClient,
	},
	{
		Name:   "cpu-throttle",
		Doc:    "squeeze the CPU quota of the lock holder's container inside its critical section (:holder) or of servers' (server scopes, as pause-server's) to 1-5% of a core (:N%: N%) for 1.5-3 (servers: 1-3) leases",
		Scopes: append([]string{ScopeHolder}, serverScopes...),
		New:    parseCPUThrottle,
	},
	{
		Name:   "clock-skew",
		Doc:    "jump a client's lease clock, a server process's wall clock or the next holder's process wall clock (:wall, vDSO patch) by 2-4 TTLs (:wall:+1h: by 1h) for 1-2 leases",
		Scopes: clockScopes,
		New:    parseClockSkew,
	},
	{
		Name:   "clock-rate",
		Doc:    "run both clocks of the next holder's process (:client) or of a server process (:server) fast or slow, 0.25-0.75x or 1.5-4x (:client:xR: R times true speed), for 3-5 leases (vDSO patch)",
		Scopes: rateScopes,
		New:    parseClockRate,
	},
	{
		Name:   "clock-strobe",
		Doc:    "flip a server process's wall clock (:server) or the next holder's process's (:wall) between true and 2-4 TTLs ahead every 50-200 ms, for 1-2 leases (vDSO patch)",
		Scopes: strobeScopes,
		New:    parseClockStrobe,
	},
	{
		Name:   "disk-slow",
		Doc:    "make every fsync on servers' disks (server scopes, as pause-server's; one by default) take 0.5-2 TTLs longer (:SCOPE:D: D) for 1-3 leases (lazy disks: FUSE, as root)",
		Scopes: serverScopes,
		New:    parseDiskSlow,
	},
	{
		Name:   "netem",
		Net:    true,
		Doc:    "tc netem's effects (NFQUEUE) on what a minority of servers send (:MODE:client: the next lock holder at its failpoint; :MODE:resource: the resource's containers): delay 200ms±50ms, 30% loss, 30% duplicated, 30% reordered (held 100ms), 10% corrupted, or a 16KiB/s link, for 1-3 leases",
		Scopes: netemScopes,
		New:    parseNetem,
	},
}

var (
	serverScopes    = []string{ScopeOne, ScopeLeader, ScopeMinority, ScopeMajority, ScopeAll, ScopeResource}
	killScopes      = []string{ScopeOne, ScopeLeader, ScopeMinority, ScopeAll, ScopeResource}
	partitionScopes = []string{PartOne, PartLeader, PartHalves, PartMajoritiesRing, PartBridge, PartResource}
	clockScopes     = []string{ClockClient, ClockServer, ClockWall}
	rateScopes      = []string{ClockClient, ClockServer}
	netemScopes     = []string{NetemDelay, NetemLoss, NetemDuplicate, NetemReorder, NetemCorrupt, NetemRate}
)

// noScope is the constructor of a fault that takes no :scope.
func noScope(f Fault) func(string) (Fault, error) {
	return func(scope string) (Fault, error) {
		if scope != "" {
			return nil, fmt.Errorf("%s takes no scope", f.Name())
		}
		return f, nil
	}
}
