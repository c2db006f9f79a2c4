package history

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A fault recorded before typed records (params, every figure a string)
// reads into the typed record, every common param into its field ("down"
// into Hold), every other into a figure of its name, typed; it is written
// back, and shown, exactly as recorded.
func TestFaultParamsOfEarlierRuns(t *testing.T) {
	d := func(s string) Duration { v, _ := time.ParseDuration(s); return Duration(v) }
	tok, yes, no, took := int64(92), true, false, d("5ms")
	for _, c := range []struct {
		name    string
		params  string
		want    FaultValue
		figures string
	}{
		{"pause-holder of an older version", `{"delay":"52ms","healthy_before":"after 11ms","healthy_after":"7ms","hold":"5.583s","process":"2","token":"92"}`,
			FaultValue{Hold: d("5.583s"), Holder: &Aim{Process: 2, Token: &tok}, Health: Health{Before: d("11ms"), After: d("7ms")}}, `{"delay":"52ms"}`},
		{"pause-holder:xM, replayed", `{"hit":"true","phase":"after the lease check, before the write","process":"2","token":"92","hold":"2.995s","ttl_multiple":"1.5","stop_took":"5ms","replay":"step 1 of 3"}`,
			FaultValue{Hold: d("2.995s"), Holder: &Aim{Process: 2, Token: &tok, Hit: &yes, Phase: "after the lease check, before the write", StopTook: &took}, Replay: "step 1 of 3"}, `{"ttl_multiple":1.5}`},
		{"kill:one (down, the older name of hold)", `{"down":"2.954s","healthy_after":"103ms","healthy_before":"after 1ms"}`,
			FaultValue{Hold: d("2.954s"), Health: Health{Before: d("1ms"), After: d("103ms")}}, ``},
		{"kill:all:lose-unsynced", `{"down":"3s","lost_files":"4","lost_bytes":"8192"}`,
			FaultValue{Hold: d("3s")}, `{"lost_bytes":8192,"lost_files":4}`},
		{"kill-holder", `{"process":"0","token":"92","down":"2s","ttl":"2s","lease":"2.5s","hit":"false","phase":"p"}`,
			FaultValue{Hold: d("2s"), Holder: &Aim{Process: 0, Token: &tok, Hit: &no, Phase: "p", TTL: d("2s"), Lease: d("2.5s")}}, ``},
		{"an unhealthy cluster", `{"healthy_before":"no: context deadline exceeded","healthy_after":"no: 2 of 3 down"}`,
			FaultValue{Health: Health{BeforeError: "context deadline exceeded", AfterError: "2 of 3 down"}}, ``},
		{"partition", `{"grudge":"n1 drops n2; n2 drops n1,n3; n3 drops n2","hold":"1m0.671s"}`,
			FaultValue{Hold: d("1m0.671s")}, `{"grudge":"n1 drops n2; n2 drops n1,n3; n3 drops n2"}`},
		{"partition:resource", `{"cut off from":"n1,n2,w1","hold":"3s"}`,
			FaultValue{Hold: d("3s")}, `{"cut_off_from":["n1","n2","w1"]}`},
		{"partition-client", `{"process":"1","token":"92","hit":"true","dropped":"12"}`,
			FaultValue{Holder: &Aim{Process: 1, Token: &tok, Hit: &yes}}, `{"dropped":12}`},
		{"partition-client, uncounted", `{"dropped":"uncounted: exit 1"}`, FaultValue{}, `{"uncounted":"exit 1"}`},
		{"netem:delay", `{"delay":"200ms±50ms","packets":"300","held":"290"}`, FaultValue{}, `{"delay":"200ms±50ms","held":290,"packets":300}`},
		{"netem:loss", `{"loss":"30%","dropped":"40"}`, FaultValue{}, `{"dropped":40,"loss":"30%"}`},
		{"netem:duplicate", `{"duplicate":"30%","packets":"10","duplicated":"3"}`, FaultValue{}, `{"duplicate":"30%","duplicated":3,"packets":10}`},
		{"netem:reorder", `{"reorder":"30% held 100ms","packets":"10","reordered":"3"}`, FaultValue{}, `{"packets":10,"reorder":"30% held 100ms","reordered":3}`},
		{"netem:corrupt", `{"corrupt":"10%","packets":"10","corrupted":"1"}`, FaultValue{}, `{"corrupt":"10%","corrupted":1,"packets":10}`},
		{"netem:rate", `{"rate":"16KiB/s","packets":"10","held":"9"}`, FaultValue{}, `{"held":9,"packets":10,"rate":"16KiB/s"}`},
		{"clock-rate", `{"rate":"0.25","observed_rate":"0.251","observed_lines":"40"}`, FaultValue{}, `{"observed_lines":40,"observed_rate":0.251,"rate":0.25}`},
		{"clock-rate, unobserved", `{"rate":"4","observed_rate":"unobserved: its log's stamped lines span less than 0.5s"}`, FaultValue{}, `{"rate":4,"unobserved":"its log's stamped lines span less than 0.5s"}`},
		{"clock-skew", `{"offset":"-6s","observed_offset":"-6.001s"}`, FaultValue{}, `{"observed_offset":"-6.001s","offset":"-6s"}`},
		{"clock-skew, unobserved", `{"offset":"1h0m0s","observed_offset":"unobserved: no log"}`, FaultValue{}, `{"offset":"1h0m0s","unobserved":"no log"}`},
		{"clock-strobe", `{"delta":"4s","period":"120ms","flips":"17","strobe_error":"gone"}`, FaultValue{}, `{"delta":"4s","flips":17,"period":"120ms","strobe_error":"gone"}`},
		{"cpu-throttle", `{"cpus":"0.02","cpu_used":"41ms","cpu_share":"0.013"}`, FaultValue{}, `{"cpu_share":0.013,"cpu_used":"41ms","cpus":0.02}`},
		{"cpu-throttle, unmeasured", `{"cpus":"0.05","cpu_used":"unmeasured: no cgroup"}`, FaultValue{}, `{"cpus":0.05,"unmeasured":"no cgroup"}`},
		{"disk-slow", `{"delay":"50ms","slowed_syncs":"7"}`, FaultValue{}, `{"delay":"50ms","slowed_syncs":7}`},
		{"scripted pause-waiter", `{"process":"1"}`, FaultValue{Holder: &Aim{Process: 1}}, ``},
		{"a param of no known fault", `{"k":"v"}`, FaultValue{}, `{"k":"v"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var params map[string]string
			if err := json.Unmarshal([]byte(c.params), &params); err != nil {
				t.Fatal(err)
			}
			// As an earlier version wrote it (a map's keys sorted).
			raw, _ := json.Marshal(struct {
				Fault  string            `json:"fault"`
				Nodes  []string          `json:"nodes"`
				Params map[string]string `json:"params"`
				Error  string            `json:"error"`
			}{"f", []string{"n1"}, params, "e"})
			var v FaultValue
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			got := v
			got.Figures, got.Recorded = nil, nil
			want := c.want
			want.Fault, want.Nodes, want.Error = "f", []string{"n1"}, "e"
			if !reflect.DeepEqual(got, want) {
				t.Errorf("record %+v (holder %+v), want %+v (holder %+v)", got, got.Holder, want, want.Holder)
			}
			if string(v.Figures) != c.figures {
				t.Errorf("figures %s, want %s", v.Figures, c.figures)
			}
			back, err := json.Marshal(v)
			if err != nil || !bytes.Equal(back, raw) {
				t.Errorf("written back as %s, want %s (%v)", back, raw, err)
			}
			if !reflect.DeepEqual(v.Shown(), params) {
				t.Errorf("shown %v, want the params as recorded", v.Shown())
			}
		})
	}
}

// Every fault of the runs stored in internal/cli/testdata/runs reads into
// its typed record: for a run recorded before typed records, its hold (or
// down), holder, health and figures are the recorded params', read here on
// their own; and every record is written back byte for byte.
func TestStoredRunsFaultRecords(t *testing.T) {
	paths, _ := filepath.Glob("../../cli/testdata/runs/*/history.jsonl.gz")
	if len(paths) == 0 {
		t.Fatal("no stored run")
	}
	n := 0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		z, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(z)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			var e struct {
				Process json.RawMessage `json:"process"`
				Value   json.RawMessage `json:"value"`
			}
			if json.Unmarshal(line, &e) != nil || string(e.Process) != `"nemesis"` {
				continue
			}
			n++
			var old struct {
				Params map[string]string `json:"params"`
			}
			var v FaultValue
			if err := json.Unmarshal(e.Value, &old); err != nil {
				t.Fatalf("%s: %s: %v", p, e.Value, err)
			}
			if err := json.Unmarshal(e.Value, &v); err != nil {
				t.Fatal(err)
			}
			// A run recorded since typed fault records has no params:
			// its record is read and written back as it is.
			if len(old.Params) > 0 {
				checkStored(t, p, old.Params, v)
			}
			if back, _ := json.Marshal(v); !bytes.Equal(back, e.Value) {
				t.Errorf("%s: written back as %s, recorded %s", p, back, e.Value)
			}
		}
	}
	if n == 0 {
		t.Fatal("no fault in the stored runs")
	}
}

func checkStored(t *testing.T, path string, params map[string]string, v FaultValue) {
	t.Helper()
	hold := params["hold"]
	if hold == "" {
		hold = params["down"]
	}
	if hold == "" || v.Hold.String() != hold {
		t.Errorf("%s: hold %s, recorded %q", path, v.Hold, hold)
	}
	if b := strings.TrimPrefix(params["healthy_before"], "after "); v.Health.Before.String() != b {
		t.Errorf("%s: health before %s, recorded %q", path, v.Health.Before, params["healthy_before"])
	}
	if a, ok := params["healthy_after"]; ok && v.Health.After.String() != a {
		t.Errorf("%s: health after %s, recorded %q", path, v.Health.After, a)
	}
	if p, ok := params["process"]; ok {
		if v.Holder == nil || v.Holder.Process.String() != p || v.Holder.Token == nil || strconv.FormatInt(*v.Holder.Token, 10) != params["token"] {
			t.Errorf("%s: holder %+v, recorded process %s token %s", path, v.Holder, p, params["token"])
		}
	} else if v.Holder != nil {
		t.Errorf("%s: holder %+v, none recorded", path, v.Holder)
	}
	var figs map[string]any
	if len(v.Figures) > 0 {
		_ = json.Unmarshal(v.Figures, &figs)
	}
	for _, k := range []string{"delay", "grudge"} {
		if p, ok := params[k]; ok && figs[k] != p {
			t.Errorf("%s: figure %s %v, recorded %q", path, k, figs[k], p)
		}
	}
}

// A new run's fault is written as its typed record, read back the same,
// and its stop's record adds to its start's.
func TestFaultRecordRoundTrip(t *testing.T) {
	tok, hit, took := int64(7), true, Duration(3*time.Millisecond)
	start := FaultValue{Fault: "pause-holder:x1.5", Nodes: []string{"w2"}, Hold: Duration(2997 * time.Millisecond),
		Holder: &Aim{Process: 1, Token: &tok, Hit: &hit, Phase: "p", StopTook: &took}, Health: Health{Before: Duration(4 * time.Millisecond)},
		Figures: FiguresOf(map[string]any{"ttl_multiple": 1.5})}
	b, err := json.Marshal(start)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"fault":"pause-holder:x1.5","nodes":["w2"],"hold":"2.997s","holder":{"process":1,"token":7,"hit":true,"phase":"p","stop_took":"3ms"},"health":{"before":"4ms"},"figures":{"ttl_multiple":1.5}}`
	if string(b) != want {
		t.Errorf("written as %s, want %s", b, want)
	}
	var back FaultValue
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, start) {
		t.Errorf("read back as %+v (%v), want %+v", back, err, start)
	}
	stop := start
	stop.Health.After = Duration(9 * time.Millisecond)
	stop.Figures = FiguresOf(map[string]any{"flips": 3})
	enc := func(f string, v FaultValue) Event {
		raw, _ := json.Marshal(v)
		return Event{Process: Nemesis, Type: Info, F: f, Value: raw}
	}
	fs, err := Faults([]Event{enc(FStart, start), enc(FStop, stop)})
	if err != nil || len(fs) != 1 {
		t.Fatalf("%v %v", fs, err)
	}
	if f := fs[0]; f.Health.Before != start.Health.Before || f.Health.After != stop.Health.After || string(f.Figures) != `{"flips":3,"ttl_multiple":1.5}` {
		t.Errorf("merged %+v figures %s", f.Health, f.Figures)
	}
	if s := fs[0].Shown(); s["hold"] != "2.997s" || s["healthy_before"] != "after 4ms" || s["healthy_after"] != "9ms" || s["flips"] != "3" || s["hit"] != "true" || s["stop_took"] != "3ms" {
		t.Errorf("shown %v", s)
	}
}
