package history

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// ReadFileContext ends when its context does, whether the file is a FIFO
// that no writer opened or one whose writer stopped writing; the error
// wraps the context's cause.
func TestReadFileContextFIFO(t *testing.T) {
	cause := errors.New("test cancelled")
	for _, writer := range []bool{false, true} {
		fifo := filepath.Join(t.TempDir(), "history.jsonl")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := ReadFileContext(ctx, fifo)
			done <- err
		}()
		if writer {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.WriteString(`{"index":0,"time_ns":1,"process":0,"type":"invoke","f":"append"}` + "\n")
		}
		time.Sleep(100 * time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("writer %v: returned before the cancel: %v", writer, err)
		default:
		}
		cancel(cause)
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
				t.Errorf("writer %v: error %v, want the cancel and its cause", writer, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("writer %v: still reading 5s after the cancel", writer)
		}
	}
}
