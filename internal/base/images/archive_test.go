package images

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tags of the tests' images, shaped as fencecheck's.
const (
	baseRef   = "fencecheck/base:6500e7eff356"
	etcdRef   = "fencecheck/etcd:3.6.16-1a2b3c4d5e6f"
	workerRef = "fencecheck/worker:2b3c4d5e6f70"
)

// loadWithin is Load of dir on eng, failing the test when it has not
// returned within 5 s (it would have blocked opening a FIFO).
func loadWithin(t *testing.T, eng *engineModel, dir string) (LoadResult, error) {
	t.Helper()
	type out struct {
		res LoadResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Load(context.Background(), eng, dir, t.Logf)
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(5 * time.Second):
		t.Fatalf("Load of %s did not return within 5s", dir)
		return LoadResult{}, nil
	}
}

// An archive names exactly the image its file name says, or nothing of the
// directory is loaded: a tag planted in another image's archive (the
// worker's tag in the base's, replacing the worker image every run uses),
// an archive holding another image, a manifest.json given twice (the
// Engine reads the last), or one good archive beside a bad one. The
// Engine's tags are as they were.
func TestLoadRefusesPlantedTags(t *testing.T) {
	baseDup := archiveEntries(baseRef)
	baseDup = append(baseDup, entry{name: "./manifest.json", body: manifestOf(baseRef, baseRef, workerRef)})
	for _, c := range []struct {
		name    string
		present []string           // images the Engine has before
		files   map[string][]entry // archive name's ref -> its entries
		want    string             // in the error
	}{
		{"another tag inside", []string{workerRef}, map[string][]entry{baseRef: archiveEntries(baseRef, baseRef, workerRef)}, workerRef},
		{"another image", nil, map[string][]entry{baseRef: archiveEntries(etcdRef)}, etcdRef},
		{"no tag", nil, map[string][]entry{baseRef: withManifest(archiveEntries(baseRef), manifestOf(baseRef, []string{}...))}, "manifest.json"},
		{"manifest.json twice", []string{workerRef}, map[string][]entry{baseRef: baseDup}, "manifest.json"},
		{"a good archive beside a bad one", nil, map[string][]entry{baseRef: archiveEntries(baseRef), workerRef: archiveEntries(workerRef, workerRef, etcdRef)}, etcdRef},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := newEngineModel()
			for _, ref := range c.present {
				eng.add(ref)
			}
			before := eng.snapshot()
			dir := t.TempDir()
			for ref, entries := range c.files {
				writeArchive(t, dir, ref, entries)
			}
			res, err := loadWithin(t, eng, dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load: %+v, %v; want an error naming %s", res, err, c.want)
			}
			if after := eng.snapshot(); !maps.Equal(after, before) {
				t.Errorf("the Engine's tags went from %v to %v", before, after)
			}
		})
	}
}

// manifestOf is a manifest.json of the model's image ref with RepoTags
// tags (none at all when tags is empty).
func manifestOf(ref string, tags ...string) []byte {
	_, id := imageConfig(ref)
	if tags == nil {
		tags = []string{}
	}
	b, _ := json.Marshal([]map[string]any{{"Config": strings.TrimPrefix(id, "sha256:") + ".json", "RepoTags": tags, "Layers": []string{strings.Repeat("a", 64) + "/layer.tar"}}})
	return b
}

// withManifest is entries with manifest.json's content replaced by man.
func withManifest(entries []entry, man []byte) []entry {
	out := slices.Clone(entries)
	for i := range out {
		if out[i].name == "manifest.json" {
			out[i].body = man
		}
	}
	return out
}

// After loading, what the Engine says it loaded is checked: exactly the
// archive's tag, with the archive's image ID. An Engine that tagged more,
// or whose image is another, has what it loaded removed, and Load fails.
func TestLoadChecksWhatTheEngineLoaded(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(*engineModel)
		want  string
	}{
		{"one tag more", func(m *engineModel) { m.extraTag = etcdRef }, etcdRef},
		{"another image ID", func(m *engineModel) { m.skewID = true }, "image ID"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := newEngineModel()
			c.setup(eng)
			before := eng.snapshot()
			dir := t.TempDir()
			writeArchive(t, dir, baseRef, archiveEntries(baseRef))
			res, err := loadWithin(t, eng, dir)
			if err == nil || !strings.Contains(err.Error(), c.want) || len(res.Loaded) != 0 {
				t.Errorf("Load: %+v, %v; want an error naming %s", res, err, c.want)
			}
			if after := eng.snapshot(); !maps.Equal(after, before) {
				t.Errorf("the Engine's tags went from %v to %v: what it loaded was not removed", before, after)
			}
		})
	}
}

// An archive is a regular file, not empty and not a link: a FIFO (which
// blocked the open forever), a link (to /dev/zero, which streamed
// forever, or to an archive outside the directory), a device and an
// empty file are refused with what is wrong, before anything is loaded.
func TestLoadRefusesNonRegularFiles(t *testing.T) {
	elsewhere := filepath.Join(t.TempDir(), "elsewhere.tar")
	if err := os.WriteFile(elsewhere, savedArchive(baseRef), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "named pipe"},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "symbolic link"},
		{"link to an archive", func(p string) error { return os.Symlink(elsewhere, p) }, "symbolic link"},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o644) }, "is empty"},
		{"not a tar", func(p string) error { return os.WriteFile(p, []byte("hello\n"), 0o644) }, "not an archive of images save"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := newEngineModel()
			dir := t.TempDir()
			if err := c.make(filepath.Join(dir, ArchiveName(baseRef))); err != nil {
				t.Fatal(err)
			}
			res, err := loadWithin(t, eng, dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Load: %+v, %v; want an error saying %q", res, err, c.want)
			}
			if eng.loads != 0 {
				t.Errorf("the Engine was given %d archives", eng.loads)
			}
		})
	}
}

// Save keeps an archive only when it is a regular file holding the
// image's archive: an empty file, a link (to /dev/zero, or to a good
// archive), a FIFO, a cut archive and another image's archive under the
// image's name are written again, and the next load loads the image.
func TestSaveRewritesDamagedArchives(t *testing.T) {
	elsewhere := filepath.Join(t.TempDir(), "elsewhere.tar")
	if err := os.WriteFile(elsewhere, savedArchive(baseRef), 0o644); err != nil {
		t.Fatal(err)
	}
	good := savedArchive(baseRef)
	for _, c := range []struct {
		name string
		make func(path string) error
	}{
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o644) }},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"link to an archive", func(p string) error { return os.Symlink(elsewhere, p) }},
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"cut short", func(p string) error { return os.WriteFile(p, good[:len(good)/2], 0o644) }},
		{"another image", func(p string) error { return os.WriteFile(p, savedArchive(etcdRef), 0o644) }},
		{"a tag planted", func(p string) error {
			return os.WriteFile(p, tarOf(archiveEntries(baseRef, baseRef, workerRef)), 0o644)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := newEngineModel()
			eng.add(baseRef)
			dir := t.TempDir()
			p := filepath.Join(dir, ArchiveName(baseRef))
			if err := c.make(p); err != nil {
				t.Fatal(err)
			}
			res, err := Save(context.Background(), eng, dir, []string{baseRef}, t.Logf)
			if err != nil || len(res.Written) != 1 || len(res.Kept) != 0 {
				t.Fatalf("Save: %+v, %v; want the archive written again", res, err)
			}
			st, err := os.Lstat(p)
			if err != nil || !st.Mode().IsRegular() {
				t.Fatalf("%s after save: %v, %v; want a regular file", p, st, err)
			}
			if b, _ := os.ReadFile(p); !bytes.Equal(b, good) {
				t.Errorf("%s after save is not the image's archive", p)
			}
			eng.Remove(context.Background(), baseRef)
			if res, err := loadWithin(t, eng, dir); err != nil || len(res.Loaded) != 1 {
				t.Errorf("load after save: %+v, %v", res, err)
			}
		})
	}
	// A good archive is kept.
	eng := newEngineModel()
	eng.add(baseRef)
	dir := t.TempDir()
	writeArchive(t, dir, baseRef, archiveEntries(baseRef))
	if res, err := Save(context.Background(), eng, dir, []string{baseRef}, t.Logf); err != nil || len(res.Kept) != 1 || len(res.Written) != 0 {
		t.Errorf("Save over a good archive: %+v, %v; want it kept", res, err)
	}
}

// SaveKinds writes the archives of exactly the kinds asked, each once:
// an Engine holding every fencecheck image (other versions, kubernetes,
// consul, zookeeper) gives a cache of etcd's matrix only base, etcd and
// the worker; a second save writes nothing; a kind whose image is not
// built is refused before anything is written; a cache of other kinds
// loses the archives it no longer holds.
func TestSaveKindsSavesWhatIsAsked(t *testing.T) {
	worker := filepath.Join(t.TempDir(), "fencecheck-worker")
	if err := os.WriteFile(worker, []byte("a worker binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	workerRef, err := WorkerRef(worker)
	if err != nil {
		t.Fatal(err)
	}
	eng := newEngineModel()
	for _, ref := range []string{BaseRef(), EtcdRef(), ConsulRef(), ZooKeeperRef(), KubernetesRef(), workerRef} {
		eng.add(ref)
	}
	for i, v := range Versions(Etcd) {
		if i > 0 {
			eng.add(versionRef(v, Etcd))
		}
	}
	dir := t.TempDir()
	names := func() []string {
		ents, _ := os.ReadDir(dir)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	want := []string{ArchiveName(BaseRef()), ArchiveName(EtcdRef()), ArchiveName(workerRef)}
	slices.Sort(want)
	res, err := SaveKinds(context.Background(), eng, dir, []string{"base", "etcd", "worker", "etcd"}, worker, t.Logf)
	if err != nil || len(res.Written) != 3 || !slices.Equal(names(), want) {
		t.Fatalf("SaveKinds base etcd worker: %+v, %v; the directory holds %q, want %q", res, err, names(), want)
	}
	if res, err := SaveKinds(context.Background(), eng, dir, []string{"base", "etcd", "worker"}, worker, t.Logf); err != nil || len(res.Written) != 0 || len(res.Kept) != 3 {
		t.Errorf("second save: %+v, %v; want each archive kept, none written again", res, err)
	}
	eng.Remove(context.Background(), ZooKeeperRef())
	before := names()
	if _, err := SaveKinds(context.Background(), eng, dir, []string{"base", "zookeeper"}, worker, t.Logf); err == nil || !strings.Contains(err.Error(), "images build zookeeper") || !slices.Equal(names(), before) {
		t.Errorf("zookeeper not built: %v; the directory holds %q, want %q", err, names(), before)
	}
	if res, err := SaveKinds(context.Background(), eng, dir, []string{"base", "consul"}, worker, t.Logf); err != nil || len(res.Written) != 1 || len(res.Removed) != 2 || len(names()) != 2 {
		t.Errorf("a cache of base and consul: %+v, %v, holds %q", res, err, names())
	}
}
