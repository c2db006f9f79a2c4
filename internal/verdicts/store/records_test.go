package store

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/record"
)

// seen is a record of a kind this test registers.
type seen []int64

func (seen) Key() string { return "test_seen" }

func init() {
	record.Register(record.Kind{Key: "test_seen", Decode: func(b json.RawMessage) (record.Record, error) {
		var s seen
		err := json.Unmarshal(b, &s)
		return s, err
	}})
}

// A record is written at its key between results.json's "elapsed" and
// "interrupted" (where leaders and kept_data were named fields), read back
// into Records and not into the workload's result; a record that takes
// one of results.json's own names is refused.
func TestResultsRecords(t *testing.T) {
	r := Results{Workload: "lock-append", Elapsed: "3s", Note: "n", Records: record.Set{seen{1, 2}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	e, k, n := strings.Index(s, `"elapsed"`), strings.Index(s, `"test_seen":[1,2]`), strings.Index(s, `"note"`)
	if e < 0 || k < e || n < k {
		t.Errorf("results.json %s: want elapsed, test_seen, note in that order", s)
	}
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got, ok := record.Find[seen](back.Records); !ok || len(got) != 2 {
		t.Errorf("records read back %v", back.Records)
	}
	if _, ok := back.Result.(RawResult)["test_seen"]; ok {
		t.Error("the record is also in the workload's result")
	}
	if err := json.Unmarshal([]byte(`{"valid":true,"test_seen":"x"}`), &back); err == nil {
		t.Error("a record of the wrong shape was read")
	}
	if _, err := json.Marshal(Results{Records: record.Set{shadow{}}}); err == nil {
		t.Error("a record named note was written over results.json's own")
	}
}

type shadow struct{}

func (shadow) Key() string { return "note" }
