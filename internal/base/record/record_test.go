package record_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/record"
)

// note is a record of a kind the test registers: carried by check, one
// summary line, one mark, and a section.
type note struct {
	Text string `json:"text"`
	At   int64  `json:"at_ns"`
}

func (*note) Key() string   { return "test_note" }
func (n *note) IsNil() bool { return n == nil }
func (n *note) Summary() []record.Line {
	return []record.Line{{Label: "note", Text: n.Text}}
}
func (n *note) Marks(end int64) []record.Mark {
	return []record.Mark{{Lane: "w1", Tag: "said", Start: n.At, End: end, Words: n.Text, Tell: "w1 said " + n.Text, Who: "w1"}}
}
func (n *note) Bound(lim record.Limits) record.Record {
	out := *n
	if len(out.Text) > lim.Text {
		out.Text = out.Text[:lim.Text]
	}
	return &out
}

// count is a record of a kind check makes again (not carried).
type count int

func (count) Key() string { return "test_count" }

var (
	noteKind = record.Kind{Key: "test_note", Carried: true, Styles: []record.Style{{Tag: "said", Bar: true, Class: "said", CSS: ".said{}"}},
		Decode: func(b json.RawMessage) (record.Record, error) {
			var n note
			err := json.Unmarshal(b, &n)
			return &n, err
		}}
	countKind = record.Kind{Key: "test_count",
		Decode: func(b json.RawMessage) (record.Record, error) {
			var c count
			err := json.Unmarshal(b, &c)
			return c, err
		}}
)

func init() { record.Register(noteKind, countKind) }

// A set holds one record of each kind, in the registered order whatever
// order they were put in; a typed nil removes its kind's.
func TestSetPut(t *testing.T) {
	var s record.Set
	s = s.Put(count(3)).Put(&note{Text: "a"}).Put(count(4))
	if len(s) != 2 || s[0].Key() != "test_note" || s[1] != count(4) {
		t.Fatalf("set %v: want the note, then count 4", s)
	}
	s = s.Put((*note)(nil))
	if len(s) != 1 || s[0] != count(4) {
		t.Errorf("after a nil note: %v, want count 4 alone", s)
	}
	if n, ok := record.Find[*note](s.Put(&note{Text: "b"})); !ok || n.Text != "b" {
		t.Errorf("Find: %v, %v", n, ok)
	}
}

// check keeps the stored records of carried kinds and makes the others
// again.
func TestSetCarry(t *testing.T) {
	old := record.Set{&note{Text: "measured in the run"}, count(1)}
	now := record.Set{count(2)}
	got := now.Carry(old)
	want := record.Set{&note{Text: "measured in the run"}, count(2)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("carried %v, want %v", got, want)
	}
	if got := (record.Set{&note{Text: "made again"}}).Carry(record.Set{}); len(got) != 0 {
		t.Errorf("a carried kind the stored run lacks: %v, want none", got)
	}
}

// Records are read by their keys from results.json's object, which loses
// them; a key of no registered kind stays; null is no record; a record
// of the wrong shape is an error.
func TestDecode(t *testing.T) {
	obj := map[string]json.RawMessage{"test_note": json.RawMessage(`{"text":"x","at_ns":5}`), "test_count": json.RawMessage(`null`), "lost": json.RawMessage(`1`)}
	s, err := record.Decode(obj)
	if err != nil || len(s) != 1 || s[0].(*note).At != 5 {
		t.Fatalf("decoded %v, %v", s, err)
	}
	if _, ok := obj["test_note"]; ok || len(obj) != 1 {
		t.Errorf("left %v, want only lost", obj)
	}
	if _, err := record.Decode(map[string]json.RawMessage{"test_count": json.RawMessage(`"many"`)}); err == nil {
		t.Error("a count of the wrong type decoded")
	}
}

// Marks carry their kind's key, so their style row is found; bounds,
// the leader and the style sheet go through the same kinds.
func TestMarksAndStyles(t *testing.T) {
	s := record.Set{&note{Text: "hello", At: 2}, count(1)}
	ms := s.Marks(9)
	if len(ms) != 1 || ms[0].Key != "test_note" || ms[0].End != 9 {
		t.Fatalf("marks %+v", ms)
	}
	if st, ok := ms[0].Style(); !ok || !st.Bar || st.Class != "said" {
		t.Errorf("style %+v, %v", st, ok)
	}
	if b := s.Bound(record.Limits{Text: 2}); b[0].(*note).Text != "he" || s[0].(*note).Text != "hello" {
		t.Errorf("bound %v (the set's own %v must stay)", b[0], s[0])
	}
	if s.LeaderAt(3) != "" {
		t.Error("a leader from records that name none")
	}
	if css := record.CSS(); css == "" {
		t.Error("no style rules")
	}
}
