package register

import (
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

func regv(key string, value, old, new *int64, absent bool) Value {
	return Value{Key: key, Value: value, Old: old, New: new, Absent: absent}
}

func i64(v int64) *int64 { return &v }

func TestCheck(t *testing.T) {
	type step struct {
		p   history.Process
		typ history.Type
		f   string
		v   Value
	}
	run := func(steps []step) Result {
		rec := history.NewMemoryRecorder()
		for _, s := range steps {
			rec.Record(s.p, s.typ, s.f, s.v)
		}
		return Check(rec.Events(), checkers.Options{})
	}
	legal := []step{
		{0, history.Invoke, FRead, regv("k0", nil, nil, nil, false)},
		{0, history.Ok, FRead, regv("k0", nil, nil, nil, true)},
		{1, history.Invoke, FWrite, regv("k0", i64(3), nil, nil, false)},
		{1, history.Ok, FWrite, regv("k0", i64(3), nil, nil, false)},
		{2, history.Invoke, FCAS, regv("k0", nil, i64(3), i64(4), false)},
		{2, history.Ok, FCAS, regv("k0", nil, i64(3), i64(4), false)},
		{0, history.Invoke, FCAS, regv("k0", nil, i64(3), i64(1), false)},
		{0, history.Fail, FCAS, regv("k0", nil, i64(3), i64(1), false)},
		{1, history.Invoke, FRead, regv("k0", nil, nil, nil, false)},
		{1, history.Ok, FRead, regv("k0", i64(4), nil, nil, false)},
	}
	if r := run(legal); r.Valid != checkers.Valid || r.Checkers.Stats.Ok != 4 || r.Checkers.Stats.Fail != 1 {
		t.Errorf("legal history: %s, %+v", r.Valid, r.Checkers.Stats)
	}
	// A read after the cas completed that still sees 3: stale.
	stale := append(legal[:len(legal):len(legal)],
		step{2, history.Invoke, FRead, regv("k0", nil, nil, nil, false)},
		step{2, history.Ok, FRead, regv("k0", i64(3), nil, nil, false)},
	)
	if r := run(stale); r.Valid != checkers.Invalid || r.Checkers.Linearizable.FailingKey != "k0" {
		t.Errorf("stale read: %s, failing key %q", r.Valid, r.Checkers.Linearizable.FailingKey)
	}
	// A write whose outcome is unknown may explain a later read.
	maybe := []step{
		{0, history.Invoke, FWrite, regv("k1", i64(2), nil, nil, false)},
		{0, history.Info, FWrite, regv("k1", i64(2), nil, nil, false)},
		{1, history.Invoke, FRead, regv("k1", nil, nil, nil, false)},
		{1, history.Ok, FRead, regv("k1", i64(2), nil, nil, false)},
	}
	if r := run(maybe); r.Valid != checkers.Valid {
		t.Errorf("info write seen later: %s", r.Valid)
	}
	bad := []step{{0, history.Invoke, "append", regv("k1", nil, nil, nil, false)}}
	if r := run(bad); r.Valid != checkers.Unknown || r.Error == "" {
		t.Errorf("foreign function: %s %q", r.Valid, r.Error)
	}
}
