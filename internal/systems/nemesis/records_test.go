package nemesis

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Each fault's record type reads the figures of its runs recorded before
// typed records (every figure a string in params, by the names those runs
// used), and writes the same names.
func TestRecordsReadEarlierRuns(t *testing.T) {
	d := func(s string) history.Duration { v, _ := time.ParseDuration(s); return history.Duration(v) }
	i64 := func(n int64) *int64 { return &n }
	in := func(n int) *int { return &n }
	f64 := func(f float64) *float64 { return &f }
	dp := func(s string) *history.Duration { v := d(s); return &v }
	for _, c := range []struct {
		fault  string
		params string
		got    any
		want   any
	}{
		{"pause-holder:x1.5", `{"ttl_multiple":"1.5","stop_took":"5ms","hold":"3s"}`, &PauseHolderRecord{}, &PauseHolderRecord{TTLMultiple: 1.5}},
		{"pause-holder", `{"delay":"52ms","hold":"3s"}`, &PauseHolderRecord{}, &PauseHolderRecord{Delay: d("52ms")}},
		{"kill:all:lose-unsynced", `{"down":"3s","lost_files":"4","lost_bytes":"8192"}`, &KillRecord{}, &KillRecord{LostFiles: in(4), LostBytes: i64(8192)}},
		{"partition:leader", `{"grudge":"n1 drops n2","hold":"3s"}`, &PartitionRecord{}, &PartitionRecord{Grudge: "n1 drops n2"}},
		{"partition:resource", `{"cut off from":"n1,w1","hold":"3s"}`, &PartitionRecord{}, &PartitionRecord{CutOffFrom: []string{"n1", "w1"}}},
		{"partition-client", `{"dropped":"12"}`, &PartitionClientRecord{}, &PartitionClientRecord{Dropped: in(12)}},
		{"partition-client", `{"dropped":"uncounted: exit 1"}`, &PartitionClientRecord{}, &PartitionClientRecord{Uncounted: "exit 1"}},
		{"netem:delay", `{"delay":"200ms±50ms","packets":"300","held":"290"}`, &NetemRecord{}, &NetemRecord{Delay: "200ms±50ms", Packets: i64(300), Held: i64(290)}},
		{"netem:loss", `{"loss":"30%","dropped":"40"}`, &NetemRecord{}, &NetemRecord{Loss: "30%", Dropped: i64(40)}},
		{"netem:duplicate", `{"duplicate":"30%","packets":"10","duplicated":"3"}`, &NetemRecord{}, &NetemRecord{Duplicate: "30%", Packets: i64(10), Duplicated: i64(3)}},
		{"netem:reorder", `{"reorder":"30% held 100ms","packets":"10","reordered":"3"}`, &NetemRecord{}, &NetemRecord{Reorder: "30% held 100ms", Packets: i64(10), Reordered: i64(3)}},
		{"netem:corrupt", `{"corrupt":"10%","packets":"10","corrupted":"1"}`, &NetemRecord{}, &NetemRecord{Corrupt: "10%", Packets: i64(10), Corrupted: i64(1)}},
		{"netem:rate", `{"rate":"16KiB/s","packets":"10","held":"9"}`, &NetemRecord{}, &NetemRecord{Rate: "16KiB/s", Packets: i64(10), Held: i64(9)}},
		{"clock-rate", `{"rate":"0.25","observed_rate":"0.251","observed_lines":"40"}`, &ClockRateRecord{}, &ClockRateRecord{Rate: 0.25, ObservedRate: f64(0.251), ObservedLines: 40}},
		{"clock-rate", `{"rate":"4","observed_rate":"unobserved: short"}`, &ClockRateRecord{}, &ClockRateRecord{Rate: 4, Unobserved: "short"}},
		{"clock-skew:server", `{"offset":"-6s","observed_offset":"-6.001s"}`, &ClockSkewRecord{}, &ClockSkewRecord{Offset: d("-6s"), ObservedOffset: dp("-6.001s")}},
		{"clock-skew:server", `{"offset":"1h0m0s","observed_offset":"unobserved: no log"}`, &ClockSkewRecord{}, &ClockSkewRecord{Offset: d("1h"), Unobserved: "no log"}},
		{"clock-strobe", `{"delta":"4s","period":"120ms","flips":"17","strobe_error":"gone"}`, &ClockStrobeRecord{}, &ClockStrobeRecord{Delta: d("4s"), Period: d("120ms"), Flips: in(17), StrobeError: "gone"}},
		{"cpu-throttle", `{"cpus":"0.02","cpu_used":"41ms","cpu_share":"0.013"}`, &CPUThrottleRecord{}, &CPUThrottleRecord{CPUs: 0.02, CPUUsed: dp("41ms"), CPUShare: f64(0.013)}},
		{"cpu-throttle", `{"cpus":"0.05","cpu_used":"unmeasured: no cgroup"}`, &CPUThrottleRecord{}, &CPUThrottleRecord{CPUs: 0.05, Unmeasured: "no cgroup"}},
		{"disk-slow", `{"delay":"50ms","slowed_syncs":"7"}`, &DiskSlowRecord{}, &DiskSlowRecord{Delay: d("50ms"), SlowedSyncs: i64(7)}},
	} {
		var v history.FaultValue
		if err := json.Unmarshal([]byte(`{"fault":"`+c.fault+`","params":`+c.params+`}`), &v); err != nil {
			t.Fatal(err)
		}
		if err := v.DecodeFigures(c.got); err != nil {
			t.Errorf("%s %s: %v", c.fault, c.params, err)
			continue
		}
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s %s: %+v, want %+v", c.fault, c.params, c.got, c.want)
		}
		// A new run writes the same figures, under the same names.
		v2 := history.FaultValue{Fault: c.fault, Figures: history.FiguresOf(c.want)}
		var again map[string]any
		var old map[string]any
		_ = json.Unmarshal(v2.Figures, &again)
		_ = json.Unmarshal(v.Figures, &old)
		if !reflect.DeepEqual(again, old) {
			t.Errorf("%s: a new run writes %s, an earlier one reads as %s", c.fault, v2.Figures, v.Figures)
		}
	}
}
