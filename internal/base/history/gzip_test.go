package history

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gz is b gzipped.
func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A gzipped history (history.jsonl.gz) reads as the history it holds,
// decompressed as it is read; members one after another read as one
// history; a cut one is an error naming the file, not a shorter history.
func TestReadFileGzip(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "history.jsonl")
	r, err := NewRecorder(plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		r.Record(Process(i%5), Invoke, "append", map[string]int{"element": i})
		r.Record(Process(i%5), Ok, "append", map[string]int{"element": i})
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	same := func(name string, got []Event, err error) {
		t.Helper()
		if err != nil || !slices.EqualFunc(got, want, func(a, b Event) bool { return a.Index == b.Index && a.Time == b.Time && bytes.Equal(a.Value, b.Value) }) {
			t.Errorf("%s: %d events (%v), want the %d of the plain history", name, len(got), err, len(want))
		}
	}
	one := write("history.jsonl.gz", gz(t, b))
	got, err := ReadFile(one)
	same("gzipped", got, err)
	half := bytes.IndexByte(b[len(b)/2:], '\n') + len(b)/2 + 1
	got, err = ReadFile(write("two.jsonl.gz", append(gz(t, b[:half]), gz(t, b[half:])...)))
	same("two members", got, err)

	zb := gz(t, b)
	cut := write("cut.jsonl.gz", zb[:len(zb)/2])
	if got, err := ReadFile(cut); err == nil || !strings.Contains(err.Error(), cut) {
		t.Errorf("a cut gzip file: %d events, error %v", len(got), err)
	}
	if got, err := ReadFile(write("header.jsonl.gz", zb[:5])); err == nil {
		t.Errorf("a gzip header cut short: %d events, no error", len(got))
	}
}

// The bound on a line holds of what a gzipped history decompresses to: a
// small file whose one line decompresses past it (a gzip bomb) is refused
// once the line passes the bound, as the same line uncompressed is.
func TestReadFileGzipLineBound(t *testing.T) {
	old := maxLine
	maxLine = 1 << 20
	t.Cleanup(func() { maxLine = old })
	long := append([]byte(`{"index":0,"time_ns":1,"process":0,"type":"invoke","f":"`), bytes.Repeat([]byte("f"), 64<<20)...)
	long = append(long, "\"}\n"...)
	zb := gz(t, long)
	if len(zb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes", len(zb))
	}
	p := filepath.Join(t.TempDir(), "history.jsonl.gz")
	if err := os.WriteFile(p, zb, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); !errors.Is(err, bufio.ErrTooLong) {
		t.Errorf("a %d-byte file of a 64 MB line: %v, want %v", len(zb), err, bufio.ErrTooLong)
	}
}
