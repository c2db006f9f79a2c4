package history

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"time"
)

// WriteText writes events as people read a history, as Jepsen's
// history.txt: one line for each invocation and completion of an
// operation and for each fault's start and stop, in the history's order,
// each with its index, its time since the history started, its wall-clock
// time (start plus that time, in UTC; left out when start is zero: a run
// recorded before test.json kept when its history started), the client
// that ran it (Process.Client of workers: its worker's name, never its
// process number, which history.jsonl keeps), its type
// (invoke, ok, fail, info), its f and its value as JSON as recorded, the
// columns separated by tabs. The
// phases a client reports inside an operation are not operations and are
// left out: history.jsonl has them.
//
//	11	0.304576523	2026-11-30T13:38:54.583Z	w2	ok    	append	{"element":3,"token":3,"read":[],"rev":8}
//	80	2.115731207	2026-11-30T13:38:56.394Z	w2 (after an unknown outcome)	invoke	append	{"element":20}
func WriteText(w io.Writer, events []Event, start time.Time, workers int) error {
	bw := bufio.NewWriter(w)
	for _, e := range events {
		if e.Type == Phase {
			continue
		}
		who := e.Process.Client(workers)
		wall := ""
		if !start.IsZero() {
			wall = "\t" + start.Add(time.Duration(e.Time)).UTC().Format(WallLayout)
		}
		fmt.Fprintf(bw, "%d\t%d.%09d%s\t%s\t%-6s\t%s\t", e.Index, e.Time/1e9, e.Time%1e9, wall, who, e.Type, e.F)
		// A value is one line of history.jsonl: it holds no newline.
		bw.Write(bytes.ReplaceAll(e.Value, []byte("\n"), []byte(" ")))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// WallLayout is how a history's wall-clock times are written: UTC, to the
// millisecond, as logs stamp their lines.
const WallLayout = "2006-01-02T15:04:05.000Z"
