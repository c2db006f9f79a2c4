package history

import (
	"bufio"
	"bytes"
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

// ReadFile reads a history.jsonl file. A last line cut short by a crash is
// dropped; any other malformed line is an error naming the file and line.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	events, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return events, nil
}

// Read reads JSON Lines events from r; see ReadFile.
func Read(r io.Reader) ([]Event, error) {
	var events []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 256*1024*1024)
	line := 0
	var pending error
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if pending != nil {
			return nil, pending
		}
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			// Tolerated only if it is the last line (a crash mid-write).
			pending = fmt.Errorf("line %d: %w", line, err)
			continue
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return events, nil
}
