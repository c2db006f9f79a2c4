package images

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// growingImages is an engine whose images appear as builds make them.
type growingImages struct {
	runtime.Images
	mu   sync.Mutex
	tags map[string]bool
}

func (g *growingImages) Inspect(_ context.Context, ref string) (runtime.ImageInfo, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.tags[ref] {
		return runtime.ImageInfo{}, fmt.Errorf("no %s: %w", ref, runtime.ErrImageNotFound)
	}
	return runtime.ImageInfo{ID: "sha256:" + ref}, nil
}

func (g *growingImages) add(ref string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tags[ref] = true
}

// Two builders (two processes' worth: each lock is a file of its own open)
// that lack the same image build it once: the second waits, says so, and
// then finds it built; a third, for another tag, does not wait.
func TestEnsureBuildsOnceAcrossBuilders(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	eng := &growingImages{tags: map[string]bool{}}
	var builds atomic.Int32
	started := make(chan struct{})
	build := func(ref string) func(context.Context, string) error {
		return func(context.Context, string) error {
			if builds.Add(1) == 1 {
				close(started)
			}
			time.Sleep(600 * time.Millisecond)
			eng.add(ref)
			return nil
		}
	}
	var logs [2]strings.Builder
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		b := &Builder{Engine: eng, Log: func(f string, a ...any) { fmt.Fprintf(&logs[i], f+"\n", a...) }}
		if i == 1 {
			<-started
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.ensure(context.Background(), "fencecheck/etcd:x", build("fencecheck/etcd:x"))
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || builds.Load() != 1 {
		t.Fatalf("errors %v, %d builds; want none and 1", errs, builds.Load())
	}
	if !strings.Contains(logs[1].String(), "another fencecheck process is building it; waiting") || !strings.Contains(logs[1].String(), "built by another process") {
		t.Errorf("the waiting builder's log:\n%s", logs[1].String())
	}
	other := &Builder{Engine: eng}
	if err := other.ensure(context.Background(), "fencecheck/consul:y", build("fencecheck/consul:y")); err != nil || builds.Load() != 2 {
		t.Errorf("another tag: %v, %d builds", err, builds.Load())
	}
}

// A process waiting for another's build stops waiting when its context
// ends, and a lock released (by unlock, or by the holder's death, which
// closes its file) is free at once.
func TestBuildLockWaitEndsWithContext(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	unlock, err := lockRef(context.Background(), "fencecheck/base:z", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	waited := false
	if _, err := lockRef(ctx, "fencecheck/base:z", func(string) { waited = true }); err == nil || !waited || !strings.Contains(err.Error(), "waiting for another process's build of fencecheck/base:z") {
		t.Errorf("a held lock: %v (told: %v)", err, waited)
	}
	unlock()
	again, err := lockRef(context.Background(), "fencecheck/base:z", func(string) { t.Error("waited for a released lock") })
	if err != nil {
		t.Fatal(err)
	}
	again()
}
