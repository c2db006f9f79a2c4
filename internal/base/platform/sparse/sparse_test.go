package sparse

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A file of mostly zeros is copied whole, byte for byte, with its zero
// blocks left as holes (the copy takes fewer disk blocks than its length),
// and take is asked for the written blocks only.
func TestCopyLeavesHoles(t *testing.T) {
	const size = 64*Block + 100
	src := make([]byte, size)
	copy(src[3*Block:], bytes.Repeat([]byte("w"), Block+7)) // two blocks written
	copy(src[size-50:], "tail")                             // the last, short block
	f, err := os.Create(filepath.Join(t.TempDir(), "wal"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var asked int64
	stored, fits, err := Copy(context.Background(), f, bytes.NewReader(src), size, func(n int64) bool { asked += n; return true }, nil)
	if err != nil || !fits {
		t.Fatalf("stored %d, fits %v, %v", stored, fits, err)
	}
	if want := int64(2*Block + 100); stored != want || asked != want {
		t.Errorf("stored %d, asked %d; want %d (two blocks and the tail)", stored, asked, want)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("the copy differs (%d bytes, %v)", len(got), err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(f.Name(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks*512 >= size {
		t.Errorf("the copy takes %d bytes on disk for %d of length: no holes", st.Blocks*512, size)
	}
}

// take's no stops the copy with fits false; a short reader is an error;
// a cancelled context stops it.
func TestCopyStops(t *testing.T) {
	src := bytes.Repeat([]byte("x"), 4*Block)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	budget := int64(2 * Block)
	stored, fits, err := Copy(context.Background(), f, bytes.NewReader(src), int64(len(src)), func(n int64) bool {
		if n > budget {
			return false
		}
		budget -= n
		return true
	}, nil)
	if err != nil || fits || stored != 2*Block {
		t.Errorf("past the budget: stored %d, fits %v, %v; want 2 blocks, not fitting", stored, fits, err)
	}
	if _, _, err := Copy(context.Background(), f, bytes.NewReader(src[:Block]), int64(len(src)), nil, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a short reader: %v; want io.ErrUnexpectedEOF", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Copy(ctx, f, bytes.NewReader(src), int64(len(src)), nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
}
