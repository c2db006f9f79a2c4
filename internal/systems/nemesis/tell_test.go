package nemesis

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// worker names a process as the report does, of 3 workers.
func worker(p history.Process) string { return p.Worker(3) }

// Each fault's record says itself in words through its own type: its
// hold, the holder by its worker (its token only when it had one), its
// figures, the cluster's health; never a name=value pair.
func TestTellSaysEachRecordInWords(t *testing.T) {
	d := func(s string) history.Duration { v, _ := time.ParseDuration(s); return history.Duration(v) }
	tok := func(n int64) *int64 { return &n }
	yes, no := true, false
	health := history.Health{Before: d("6ms"), After: d("35ms")}
	for _, c := range []struct {
		name string
		v    history.FaultValue
		want string
	}{
		{"pause-holder", history.FaultValue{Fault: "pause-holder", Nodes: []string{"w1"}, Hold: d("2.1s"),
			Holder: &history.Aim{Process: 3, Token: tok(4), Hit: &yes, Phase: PhaseFailpoint}, Health: health},
			"held 2.1s; the holder w1 (token 4) was frozen at its failpoint; the cluster served before it and again 35ms after the heal"},
		{"a tokenless holder", history.FaultValue{Fault: "pause-holder:x1.5", Nodes: []string{"w2"}, Hold: d("3s"),
			Holder:  &history.Aim{Process: 1, Token: tok(0), Hit: &yes, Phase: PhaseFailpoint, StopTook: new(d("5ms"))},
			Figures: history.FiguresOf(PauseHolderRecord{TTLMultiple: 1.5})},
			"held 3s; the holder w2 was frozen at its failpoint (SIGSTOP took 5ms); 1.5 TTLs"},
		{"a missed holder", history.FaultValue{Fault: "partition-client", Nodes: []string{"w3"}, Hold: d("4s"),
			Holder: &history.Aim{Process: 2, Token: tok(9), Hit: &no}, Figures: history.FiguresOf(PartitionClientRecord{Dropped: new(12)})},
			"held 4s; the holder w3 (token 9) had left its failpoint before the fault was in place; 12 packets dropped"},
		{"kill-holder", history.FaultValue{Fault: "kill-holder", Nodes: []string{"w1"}, Hold: d("2s"),
			Holder: &history.Aim{Process: 0, Token: tok(7), Hit: &yes, Lease: d("3s"), TTL: d("2s")}, Health: history.Health{AfterError: "timeout"}},
			"down 2s; the holder w1 (token 7) was killed at its failpoint; its lease 3s (TTL 2s); the cluster did not serve after the heal: timeout"},
		{"clock-rate", history.FaultValue{Fault: "clock-rate:client", Nodes: []string{"w2"}, Hold: d("8s"),
			Figures: history.FiguresOf(ClockRateRecord{Rate: 1.5, ObservedRate: new(1.49), ObservedLines: 40})},
			"held 8s; w2's clock ran at 1.5x (observed 1.49x over 40 log lines)"},
		{"clock-rate unobserved", history.FaultValue{Fault: "clock-rate:server", Nodes: []string{"n1"},
			Figures: history.FiguresOf(ClockRateRecord{Rate: 0.25, Unobserved: "no log lines"})},
			"n1's clock ran at 0.25x (unobserved: no log lines)"},
		{"clock-skew", history.FaultValue{Fault: "clock-skew:server", Nodes: []string{"n2"},
			Figures: history.FiguresOf(ClockSkewRecord{Offset: d("-6s"), ObservedOffset: new(d("-6.001s"))})},
			"n2's wall clock jumped -6s (observed -6.001s)"},
		{"clock-skew of a lease clock", history.FaultValue{Fault: "clock-skew:client", Nodes: []string{"w1"},
			Figures: history.FiguresOf(ClockSkewRecord{Offset: d("6s")})},
			"w1's lease clock jumped +6s"},
		{"clock-strobe", history.FaultValue{Fault: "clock-strobe:server", Nodes: []string{"n1"},
			Figures: history.FiguresOf(ClockStrobeRecord{Delta: d("4s"), Period: d("120ms"), Flips: new(17)})},
			"n1's wall clock flipped between true and +4s every 120ms (17 flips)"},
		{"cpu-throttle", history.FaultValue{Fault: "cpu-throttle:holder", Nodes: []string{"w1"},
			Figures: history.FiguresOf(CPUThrottleRecord{CPUs: 0.02, CPUUsed: new(d("41ms")), CPUShare: new(0.013)})},
			"w1's CPU quota cut to 2% of a core; it used 41ms of CPU (1.3% of a core)"},
		{"disk-slow", history.FaultValue{Fault: "disk-slow:one", Nodes: []string{"n3"},
			Figures: history.FiguresOf(DiskSlowRecord{Delay: d("50ms"), SlowedSyncs: new(int64(7))})},
			"every fsync took 50ms longer (7 fsyncs slowed)"},
		{"kill:lose-unsynced", history.FaultValue{Fault: "kill:one:lose-unsynced", Nodes: []string{"n1"}, Hold: d("2.954s"),
			Figures: history.FiguresOf(KillRecord{LostFiles: new(1), LostBytes: new(int64(8192))})},
			"down 2.95s; the disks forgot 1 file (8192 bytes) that no fsync had made durable"},
		{"partition", history.FaultValue{Fault: "partition:leader", Nodes: []string{"n1", "n2", "n3"}, Replay: "step 2 of 5",
			Figures: history.FiguresOf(PartitionRecord{Grudge: "n1 drops n2", Dropped: new(1)})},
			"n1 drops n2; 1 packet dropped; replays step 2 of 5"},
		{"partition of the leader named", history.FaultValue{Fault: "partition:leader", Nodes: []string{"n1", "n2", "n3"}, Leader: "n2",
			Figures: history.FiguresOf(PartitionRecord{Grudge: "n1 drops n2; n2 drops n1,n3; n3 drops n2", Dropped: new(3)})},
			"the leader n2 cut off; n1 drops n2; n2 drops n1,n3; n3 drops n2; 3 packets dropped"},
		{"netem", history.FaultValue{Fault: "netem:delay", Nodes: []string{"n1"},
			Figures: history.FiguresOf(NetemRecord{Delay: "200ms±50ms", Packets: new(int64(300)), Held: new(int64(290))})},
			"delay 200ms±50ms; 300 packets, 290 held"},
		{"pause-server", history.FaultValue{Fault: "pause-server:leader", Nodes: []string{"n2"}, Hold: d("1.234s")},
			"held 1.23s"},
	} {
		got, ok := Tell(c.v, worker)
		if !ok || got != c.want {
			t.Errorf("%s: Tell = %q, %v\n want %q", c.name, got, ok, c.want)
		}
		if strings.Contains(got, "=") || strings.Contains(got, "token 0") {
			t.Errorf("%s: %q has a raw parameter or a token 0", c.name, got)
		}
	}
}

// A record Tell cannot read through its type is left to the reader to show
// as recorded: a run recorded before typed records, a fault this version
// does not know, figures its type does not read.
func TestTellLeavesWhatItCannotRead(t *testing.T) {
	var v0 history.FaultValue
	if err := json.Unmarshal([]byte(`{"fault":"pause-holder","nodes":["w1"],"params":{"hold":"5.583s","process":"0","token":"31","healthy_after":"7ms"}}`), &v0); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]history.FaultValue{
		"recorded before typed records": v0,
		"an unknown fault":              {Fault: "meteor-strike", Hold: history.Duration(time.Second)},
		"figures of the wrong type":     {Fault: "clock-rate:client", Figures: json.RawMessage(`{"rate":"fast"}`)},
		"figures of a fault without":    {Fault: "pause-client", Figures: json.RawMessage(`{"x":1}`)},
	} {
		if got, ok := Tell(v, worker); ok {
			t.Errorf("%s: Tell = %q, true; want false", name, got)
		}
	}
}
