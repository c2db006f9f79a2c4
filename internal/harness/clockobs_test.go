package harness

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestObserveClock(t *testing.T) {
	start := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	// Lines a process whose clock runs at 0.25 writes over 4 true seconds,
	// in the three formats, with noise that carries no stamp.
	var lines []string
	for i := 0; i <= 8; i++ {
		tr := start.Add(time.Duration(i) * 500 * time.Millisecond)
		proc := start.Add(time.Duration(i) * 125 * time.Millisecond)
		engine := tr.Format(time.RFC3339Nano)
		switch i % 3 {
		case 0:
			lines = append(lines, fmt.Sprintf(`%s {"time":%q,"level":"INFO","msg":"op"}`, engine, proc.Format(time.RFC3339Nano)))
		case 1:
			lines = append(lines, fmt.Sprintf(`%s {"level":"info","ts":%q,"msg":"x"}`, engine, proc.Format(time.RFC3339Nano)))
		default:
			lines = append(lines, fmt.Sprintf("%s I%s 1 x.go:1] y", engine, proc.Format("0102 15:04:05.000000")))
		}
		lines = append(lines, engine+" unstamped noise", engine+` {"msg":"no time"}`)
	}
	// A line from before the patch does not count.
	lines = append([]string{start.Add(-time.Second).Format(time.RFC3339Nano) + ` {"time":"2026-12-02T15:00:00Z"}`}, lines...)
	seen, err := observeClock(lines, start)
	if err != nil || seen.Lines != 9 || math.Abs(seen.Rate-0.25) > 1e-9 || seen.Offset != -3*time.Second {
		t.Fatalf("observeClock = %+v, %v; want rate 0.25 from 9 lines, 3s behind", seen, err)
	}
	// One stamped line suffices: the patch's instant anchors the other end.
	if seen, err := observeClock(lines[:6], start); err != nil || seen.Lines != 2 || math.Abs(seen.Rate-0.25) > 1e-9 {
		t.Errorf("from the anchor and one line 0.5s on: %+v, %v", seen, err)
	}
	if seen, err := observeClock(lines[:3], start); err != nil || seen.Rate != 0 || seen.Offset != 0 {
		t.Errorf("a line at the anchor's instant: %+v, %v; want no rate, no offset", seen, err)
	}
	if _, err := observeClock(lines[:1], start); err == nil {
		t.Errorf("no stamped line gave an observation")
	}
	// A jump: every line an hour ahead.
	jumped := []string{start.Add(time.Second).Format(time.RFC3339Nano) + ` {"time":"2026-12-02T17:00:01Z"}`}
	if seen, err := observeClock(jumped, start); err != nil || seen.Offset != time.Hour {
		t.Errorf("an hour's jump: %+v, %v", seen, err)
	}
	short := []string{
		start.Format(time.RFC3339Nano) + ` {"time":"2026-12-02T17:00:00Z"}`,
		start.Add(100*time.Millisecond).Format(time.RFC3339Nano) + ` {"time":"2026-12-02T17:00:01Z"}`,
	}
	if seen, err := observeClock(short, start); err != nil || seen.Rate != 0 {
		t.Errorf("two lines 100ms apart gave a rate: %+v, %v", seen, err)
	}
}
