package harness

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestObserveRate(t *testing.T) {
	start := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	// Lines a process whose clock runs at 0.25 writes over 4 true seconds,
	// in the three formats, with noise that carries no stamp.
	var lines []string
	for i := 0; i <= 8; i++ {
		tr := start.Add(time.Duration(i) * 500 * time.Millisecond)
		proc := start.Add(time.Hour + time.Duration(i)*125*time.Millisecond)
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
	rate, n, err := observeRate(lines, start)
	if err != nil || n != 9 || math.Abs(rate-0.25) > 1e-9 {
		t.Fatalf("observeRate = %g, %d, %v; want 0.25 from 9 lines", rate, n, err)
	}
	if _, _, err := observeRate(lines[:3], start); err == nil {
		t.Errorf("one stamped line gave a rate")
	}
	short := []string{
		start.Format(time.RFC3339Nano) + ` {"time":"2026-12-02T17:00:00Z"}`,
		start.Add(100*time.Millisecond).Format(time.RFC3339Nano) + ` {"time":"2026-12-02T17:00:01Z"}`,
	}
	if _, _, err := observeRate(short, start); err == nil {
		t.Errorf("two lines 100ms apart gave a rate")
	}
}
