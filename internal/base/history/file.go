package history

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Recorder appends events to a history as they happen. It stamps each event
// with the next index and with the time since the recorder started on Go's
// monotonic clock, and writes it to the underlying file at once, one JSON
// object a line, so a crash of the harness keeps every event recorded before
// it. A Recorder is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	start  time.Time
	w      io.Writer
	f      *os.File
	events []Event
	err    error
	notify func(Event)
}

// NewRecorder records to the file at path (created, truncated). notify, when
// not nil, is called with every event after it is written, outside the lock.
func NewRecorder(path string, notify func(Event)) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &Recorder{start: time.Now(), w: f, f: f, notify: notify}, nil
}

// NewMemoryRecorder records to memory only (for tests and scripted runs that
// keep no file).
func NewMemoryRecorder() *Recorder {
	return &Recorder{start: time.Now(), w: io.Discard}
}

// Since is the recorder's clock: the time since it started.
func (r *Recorder) Since() time.Duration { return time.Since(r.start) }

// Start is the moment the recorder's clock reads zero.
func (r *Recorder) Start() time.Time { return r.start }

// Record stamps and writes one event; value is marshalled to JSON (nil for
// none). It returns the event as recorded. A write error is kept and returned
// by Close; recording goes on in memory.
func (r *Recorder) Record(p Process, t Type, f string, value any) Event {
	var raw json.RawMessage
	if value != nil {
		b, err := json.Marshal(value)
		if err != nil {
			panic(fmt.Sprintf("history: value of %s %s does not marshal: %v", t, f, err))
		}
		raw = b
	}
	r.mu.Lock()
	e := Event{Index: len(r.events), Time: int64(time.Since(r.start)), Process: p, Type: t, F: f, Value: raw}
	r.events = append(r.events, e)
	line, _ := json.Marshal(e)
	line = append(line, '\n')
	if _, err := r.w.Write(line); err != nil && r.err == nil {
		r.err = fmt.Errorf("history: %w", err)
	}
	notify := r.notify
	r.mu.Unlock()
	if notify != nil {
		notify(e)
	}
	return e
}

// Events returns a copy of the events recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Close syncs and closes the file and returns the first error met.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f != nil {
		if err := r.f.Sync(); err != nil && r.err == nil {
			r.err = fmt.Errorf("history: %w", err)
		}
		if err := r.f.Close(); err != nil && r.err == nil {
			r.err = fmt.Errorf("history: %w", err)
		}
		r.f = nil
		r.w = io.Discard
	}
	return r.err
}

// ReadFile reads a history.jsonl file, or the same gzipped (a file that
// begins with gzip's magic number, history.jsonl.gz: decompressed as it
// is read, within Read's bounds). A last line cut short by a crash is
// dropped; any other malformed line is an error naming the file and line.
func ReadFile(path string) ([]Event, error) {
	return ReadFileContext(context.Background(), path)
}

// ReadFileContext is ReadFile that ends when ctx does (see OpenContext),
// with an error wrapping ctx's cause.
func ReadFileContext(ctx context.Context, path string) ([]Event, error) {
	var events []Event
	if err := ScanFile(ctx, path, func(e Event) error {
		events = append(events, e)
		return nil
	}); err != nil {
		return nil, err
	}
	return events, nil
}

// gunzipped is r decompressed when it begins with gzip's magic number
// (1f 8b), else r as it is. The stream is decompressed as it is read, so
// that the bounds of Read (a line at most maxLine) hold of what it
// decompresses to, whatever its ratio; members written one after another
// read as one stream.
func gunzipped(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err != nil || magic[0] != 0x1f || magic[1] != 0x8b {
		return br, nil // too short for gzip (or unreadable): Read says so
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return zr, nil
}

// OpenContext opens a file for reading, and the file it returns ends when
// ctx does: opening a FIFO that no writer has opened, or reading one whose
// writer stops writing, waits no longer than ctx (Ctrl-C, SIGTERM). Then
// OpenContext, or Read, returns an error wrapping ctx's cause. (An open
// still blocked in the kernel is left behind, and closes what it opens.)
func OpenContext(ctx context.Context, path string) (io.ReadCloser, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, o.err
		}
		// Closing the file ends a read blocked on a pipe.
		stop := context.AfterFunc(ctx, func() { o.f.Close() })
		return &ctxFile{ctx: ctx, f: o.f, stop: stop}, nil
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, fmt.Errorf("opening %s: %w", path, interrupted(ctx))
	}
}

// ctxFile is a file whose reads end with its context.
type ctxFile struct {
	ctx  context.Context
	f    *os.File
	stop func() bool
}

func (c *ctxFile) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, interrupted(c.ctx)
	}
	n, err := c.f.Read(p)
	if err != nil && c.ctx.Err() != nil {
		return n, interrupted(c.ctx)
	}
	return n, err
}

func (c *ctxFile) Close() error {
	c.stop()
	return c.f.Close()
}

// interrupted is ctx's error and its cause (a signal, say), both wrapped.
func interrupted(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return fmt.Errorf("%w: %w", ctx.Err(), cause)
	}
	return ctx.Err()
}

// maxLine bounds one line of a history: a longer one is an error, read
// no further. (A variable only so that a test can lower it.)
var maxLine = 256 << 20

// Read reads JSON Lines events from r; see ReadFile. Two events with one
// index are an error naming the index and both lines: an event's index
// names it in every report.
func Read(r io.Reader) ([]Event, error) {
	var events []Event
	err := Scan(r, func(e Event) error {
		events = append(events, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return events, nil
}

// ScanFile is ReadFileContext one event at a time (Scan): the file's
// events are handed to fn in order and none is kept, so that a history of
// millions of events is read in the memory of one. fn's error ends the
// scan and is returned as it is; a malformed line is found only when the
// scan reaches it, after fn saw the events before it.
func ScanFile(ctx context.Context, path string, fn func(Event) error) error {
	f, err := OpenContext(ctx, path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	r, err := gunzipped(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var fnErr error
	err = Scan(r, func(e Event) error {
		fnErr = fn(e)
		return fnErr
	})
	if err != nil && err != fnErr {
		return fmt.Errorf("%s: %w", path, err)
	}
	return err
}

// Scan reads JSON Lines events from r as Read does (the same bounds, the
// same errors: a last line cut short is dropped), handing each to fn in
// the order of the lines; fn may keep an event (its value is its own).
// fn's error ends the scan and is returned.
func Scan(r io.Reader, fn func(Event) error) error {
	var idx indexes
	names := interned{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	line := 0
	var pending error
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if pending != nil {
			return pending
		}
		var e Event
		if err := decodeLine(b, &e, names); err != nil {
			// Tolerated only if it is the last line (a crash mid-write).
			pending = fmt.Errorf("line %d: %w", line, err)
			continue
		}
		if err := idx.add(e.Index, line); err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}

// interned holds one copy of each event type and function Read has met,
// so that a history's millions of events share a few strings instead of
// holding two each (a 1M-operation history: 16 million strings). At most
// maxInterned are kept; past them, a name is its own copy.
type interned map[string]string

const maxInterned = 1024

// ofBytes is of(string(b)), without a copy of a name met before.
func (m interned) ofBytes(b []byte) string {
	if c, ok := m[string(b)]; ok {
		return c
	}
	return m.of(string(b))
}

func (m interned) of(s string) string {
	if c, ok := m[s]; ok {
		return c
	}
	if len(m) < maxInterned {
		m[s] = s
	}
	return s
}

// indexes finds a repeated event index as Scan goes. While indexes grow,
// as a Recorder writes them, it keeps only runs of events whose index and
// line both step by one (a Recorder's file is one run: nothing per event);
// the first time an index does not grow it builds the set of those seen.
type indexes struct {
	runs []indexRun  // while indexes grow: the events read so far
	seen map[int]int // index -> line; nil while indexes grow
	last int         // the latest index, while they grow
}

// indexRun is n events from index and line on, each one more than the
// last in both.
type indexRun struct{ index, line, n int }

// add notes the index of the event read from line; an index already seen
// is an error.
func (x *indexes) add(index, line int) error {
	if x.seen == nil && (len(x.runs) == 0 || index > x.last) {
		x.last = index
		if n := len(x.runs); n > 0 {
			if r := &x.runs[n-1]; index == r.index+r.n && line == r.line+r.n {
				r.n++
				return nil
			}
		}
		x.runs = append(x.runs, indexRun{index: index, line: line, n: 1})
		return nil
	}
	if x.seen == nil {
		x.seen = map[int]int{}
		for _, r := range x.runs {
			for i := range r.n {
				x.seen[r.index+i] = r.line + i
			}
		}
		x.runs = nil
	}
	if first, ok := x.seen[index]; ok {
		return fmt.Errorf("line %d: index %d is also line %d's: each event has its own index", line, index, first)
	}
	x.seen[index] = line
	return nil
}
