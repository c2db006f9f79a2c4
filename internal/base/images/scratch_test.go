package images

import (
	"archive/tar"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// elfBinary is a minimal 64-bit ELF executable: one program header, an
// interpreter's (a binary linked dynamically) when dynamic, else a load
// segment's (a static one).
func elfBinary(dynamic bool) []byte {
	b := make([]byte, 64+56)
	copy(b, "\x7fELF\x02\x01\x01")
	le := binary.LittleEndian
	le.PutUint16(b[16:], uint16(elf.ET_EXEC))
	le.PutUint16(b[18:], uint16(elf.EM_X86_64))
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[32:], 64) // program headers right after this header
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[54:], 56)
	le.PutUint16(b[56:], 1)
	pt := elf.PT_LOAD
	if dynamic {
		pt = elf.PT_INTERP
	}
	le.PutUint32(b[64:], uint32(pt))
	return b
}

// buildingImages is an engine whose Build makes the tag exist and keeps
// what each build's context held; every image it was asked about is
// noted.
type buildingImages struct {
	fakeImages
	asked []string
	built map[string]map[string]*tar.Header // tag -> the context's entries
	dfs   map[string]string                 // tag -> its Dockerfile
}

func newBuildingImages(existing ...string) *buildingImages {
	f := &buildingImages{fakeImages: fakeImages{tags: map[string]map[string][]byte{}},
		built: map[string]map[string]*tar.Header{}, dfs: map[string]string{}}
	for _, ref := range existing {
		f.tags[ref] = map[string][]byte{}
	}
	return f
}

func (f *buildingImages) Inspect(ctx context.Context, ref string) (runtime.ImageInfo, error) {
	f.asked = append(f.asked, ref)
	return f.fakeImages.Inspect(ctx, ref)
}

func (f *buildingImages) Build(_ context.Context, r io.Reader, tag string, _ map[string]string) error {
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		entries[h.Name] = h
		if h.Name == "Dockerfile" {
			df, _ := io.ReadAll(tr)
			f.dfs[tag] = string(df)
		}
	}
	f.built[tag], f.tags[tag] = entries, map[string][]byte{}
	return nil
}

// The demo's images, etcd's and the worker's, need no base: building them
// never asks the engine for the base (nor debootstrap: the fake has no
// Import), and each is FROM scratch with its static binary and a /tmp
// (mode 1777); the images that stand on the base say so.
func TestDemoImagesStandOnScratch(t *testing.T) {
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "fencecheck-worker")
	if err := os.WriteFile(bin, elfBinary(false), 0o755); err != nil {
		t.Fatal(err)
	}
	eng := newBuildingImages(EtcdRef()) // etcd's compile is not this test's
	b := &Builder{Engine: eng}
	refs, err := b.EnsureAll(ctx, bin, Etcd, Worker)
	if err != nil {
		t.Fatal(err)
	}
	worker, _ := WorkerRef(bin)
	if len(refs) != 2 || refs[0] != EtcdRef() || refs[1] != worker {
		t.Errorf("EnsureAll(etcd, worker) = %v, want [%s %s]", refs, EtcdRef(), worker)
	}
	for _, ref := range eng.asked {
		if ref == BaseRef() {
			t.Errorf("the engine was asked for the base image")
		}
	}
	df := eng.dfs[worker]
	if !strings.HasPrefix(df, "FROM scratch\n") || !strings.Contains(df, "COPY fencecheck /usr/local/bin/fencecheck\n") {
		t.Errorf("worker Dockerfile:\n%s", df)
	}
	if h := eng.built[worker]["rootfs/tmp/"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o1777 {
		t.Errorf("worker context's /tmp: %+v, want a directory of mode 1777", h)
	}
	if h := eng.built[worker]["fencecheck"]; h == nil || h.Mode != 0o755 {
		t.Errorf("worker context's binary: %+v", h)
	}

	// A compiled etcd (any Go-built version) goes FROM scratch under its
	// own tag; kube-apiserver stays on the base.
	for _, kind := range []string{Etcd, "etcd@3.4.3", Consul} {
		k, name := SplitKind(kind)
		v, _ := LookupVersion(k, name)
		s := versionServer(v, k)
		if err := b.serverImage(ctx, s, elfBinary(false)); err != nil {
			t.Fatal(err)
		}
		df := eng.dfs[s.ref()]
		if !strings.HasPrefix(df, "FROM scratch\n") || !strings.Contains(df, "COPY "+k+" /usr/local/bin/"+k+"\n") || eng.built[s.ref()]["rootfs/tmp/"] == nil {
			t.Errorf("%s Dockerfile:\n%s", kind, df)
		}
	}
	if s := goServers[Kubernetes]; !s.onBase {
		t.Errorf("kube-apiserver's image is not on the base")
	}
	for kind, want := range map[string]bool{Base: true, ZooKeeper: true, Kubernetes: true, "etcd@debian": true,
		Etcd: false, "etcd@3.4.3": false, Consul: false, "consul@1.13.9": false, Worker: false} {
		if got := StandsOnBase(kind); got != want {
			t.Errorf("StandsOnBase(%s) = %v, want %v", kind, got, want)
		}
	}

	// A worker binary that links libc cannot run FROM scratch: refused,
	// saying why.
	dyn := filepath.Join(t.TempDir(), "fencecheck-worker")
	if err := os.WriteFile(dyn, elfBinary(true), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := b.EnsureWorker(ctx, dyn); err == nil || !strings.Contains(err.Error(), "linked dynamically") {
		t.Errorf("a dynamic worker binary: %v", err)
	}
}
