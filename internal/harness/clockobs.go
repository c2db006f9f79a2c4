package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ObservedClockRate measures the rate of a node's clock from its own log:
// each line the engine received since the given time carries the engine's
// (true) time and, when the process stamps its lines with its wall clock,
// the process's time (a JSON "time" or "ts" field: the worker's slog,
// etcd's zap; or klog's "I1202 15:04:05.000000" header: kube-apiserver). The
// rate is the process's time elapsed over the true time elapsed between the
// first and the last stamped line; n is how many lines were stamped. It
// says why when fewer than two stamped lines span at least half a second
// (nemesis.Env).
func (e nemesisEnv) ObservedClockRate(ctx context.Context, node string, since time.Time) (float64, int, error) {
	c := e.c
	ct, err := c.node(node)
	if err != nil {
		return 0, 0, err
	}
	lines, err := c.rt.LogLines(ctx, ct, since)
	if err != nil {
		return 0, 0, err
	}
	return observeRate(lines, since)
}

// observeRate is ObservedClockRate's arithmetic over log lines prefixed by
// the engine's RFC 3339 time.
func observeRate(lines []string, since time.Time) (float64, int, error) {
	type stamp struct{ true, proc time.Time }
	var stamps []stamp
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
	if len(stamps) < 2 {
		return 0, len(stamps), fmt.Errorf("%d log lines stamped with the process's clock since %s", len(stamps), since.Format(time.TimeOnly))
	}
	first, last := stamps[0], stamps[len(stamps)-1]
	span := last.true.Sub(first.true)
	if span < 500*time.Millisecond {
		return 0, len(stamps), fmt.Errorf("the process's stamped log lines span %s only", span.Round(time.Millisecond))
	}
	return float64(last.proc.Sub(first.proc)) / float64(span), len(stamps), nil
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
