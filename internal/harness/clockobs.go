package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
)

// ObservedClock reads what a node's clock showed since a time from its own
// log: each line the engine received since then carries the engine's
// (true) time and, when the process stamps its lines with its wall clock,
// the process's time (a JSON "time" or "ts" field: the worker's slog,
// etcd's zap; or klog's "I1202 15:04:05.000000" header: kube-apiserver).
// Offset is the process's time minus the engine's at the last stamped line.
// Rate assumes the process's wall clock read true at since (the instant its
// rate was set: a rate continues from the clock's reading, and faults come
// one at a time, so no jump is in place), which anchors the first point:
// it is the process's time elapsed over the true time elapsed from there
// to the last stamped line, 0 when no stamped line came half a second or
// more after since. An error says no line was stamped (nemesis.Env).
func (e nemesisEnv) ObservedClock(ctx context.Context, node string, since time.Time) (nemesis.ClockSeen, error) {
	c := e.c
	ct, err := c.node(node)
	if err != nil {
		return nemesis.ClockSeen{}, err
	}
	lines, err := c.rt.LogLines(ctx, ct, since)
	if err != nil {
		return nemesis.ClockSeen{}, err
	}
	return observeClock(lines, since)
}

// observeClock is ObservedClock's arithmetic over log lines prefixed by the
// engine's RFC 3339 time.
func observeClock(lines []string, since time.Time) (nemesis.ClockSeen, error) {
	type stamp struct{ true, proc time.Time }
	stamps := []stamp{{since, since}}
	for _, l := range lines {
		head, rest, ok := strings.Cut(l, " ")
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, head)
		if err != nil || at.Before(since) {
			continue
		}
		if proc, ok := processTime(rest, at); ok {
			stamps = append(stamps, stamp{at, proc})
		}
	}
	n := len(stamps) - 1
	if n == 0 {
		return nemesis.ClockSeen{}, fmt.Errorf("no log line stamped with the process's clock since %s", since.Format(time.TimeOnly))
	}
	first, last := stamps[0], stamps[n]
	seen := nemesis.ClockSeen{Lines: n, Offset: last.proc.Sub(last.true)}
	if span := last.true.Sub(first.true); span >= 500*time.Millisecond {
		seen.Rate = float64(last.proc.Sub(first.proc)) / float64(span)
	}
	return seen, nil
}

// processTime reads the time a process stamped its log line with: a JSON
// object's "time" or "ts" (RFC 3339), or a klog header, whose year is taken
// from the engine's time at.
func processTime(line string, at time.Time) (time.Time, bool) {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "{") {
		var v struct {
			Time string `json:"time"`
			TS   any    `json:"ts"`
		}
		if json.Unmarshal([]byte(line), &v) != nil {
			return time.Time{}, false
		}
		s := v.Time
		if ts, ok := v.TS.(string); ok && s == "" {
			s = ts
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		return t, err == nil
	}
	// klog: Lmmdd hh:mm:ss.uuuuuu, L one of IWEF.
	if len(line) < 21 || !strings.ContainsRune("IWEF", rune(line[0])) {
		return time.Time{}, false
	}
	t, err := time.Parse("0102 15:04:05.000000", line[1:21])
	if err != nil {
		return time.Time{}, false
	}
	t = time.Date(at.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
	return t, true
}
