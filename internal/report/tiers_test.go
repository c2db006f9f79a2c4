package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// A fault on a target with servers of more than one kind names the tier of
// each node it hit; the servers clients use are named alone.
func TestFaultRowsNameTiers(t *testing.T) {
	in := &Input{
		Test: store.TestInfo{Found: store.Found{Servers: []store.NodeInfo{{Name: "n1", Addr: "10.0.0.2:2379", Tier: "etcd"}, {Name: "a1", Addr: "10.0.0.5:6443"}}}},
		Results: &store.Results{Faults: []history.Fault{
			{FaultValue: history.FaultValue{Fault: "pause-server:one", Nodes: []string{"n1"}}, Start: 1, Stop: 2},
			{FaultValue: history.FaultValue{Fault: "kill:all", Nodes: []string{"n1", "a1"}}, Start: 3, Stop: -1},
		}},
	}
	rows := faultRows(in).Rows
	if len(rows) != 2 || rows[0].Nodes != "n1 (etcd)" || rows[1].Nodes != "n1 (etcd), a1" {
		t.Errorf("rows %+v", rows)
	}
	for _, r := range configRows(in.Test) {
		if r.Label == "servers" && r.Value != "n1 10.0.0.2:2379 etcd · a1 10.0.0.5:6443" {
			t.Errorf("servers %q", r.Value)
		}
	}
	// And through the whole page, bounds included.
	var page bytes.Buffer
	if err := Render(&page, *in); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<td>n1 (etcd), a1</td>") || !strings.Contains(page.String(), "n1 10.0.0.2:2379 etcd") {
		t.Errorf("the page names no tier")
	}
}
