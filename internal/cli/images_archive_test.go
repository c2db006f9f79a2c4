package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
	"github.com/fencecheck/fencecheck/internal/harness/imageset"
)

// images save and images load, round trip: an image saved to a directory,
// removed from the Engine and loaded back is the same image (same ID); a
// second save keeps the archive, a second load loads nothing; bad
// directories are refused.
func TestImagesSaveLoad(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ref := fmt.Sprintf("fencecheck/archive-test:%d", time.Now().UnixNano())
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for name, body := range map[string]string{
		"Dockerfile": "FROM scratch\nCOPY hello /hello\nLABEL " + images.LabelImage + "=archive-test\n",
		"hello":      ref + "\n",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body))})
		tw.Write([]byte(body))
	}
	tw.Close()
	if err := eng.Build(ctx, &ctxTar, ref, nil); err != nil {
		t.Fatal(err)
	}
	before, err := eng.Inspect(ctx, ref)
	if err != nil {
		t.Fatalf("test image not built: %v", err)
	}
	t.Cleanup(func() { eng.Remove(context.Background(), ref) })

	dir := t.TempDir()
	logf := func(f string, a ...any) { t.Logf(f, a...) }
	res, err := images.Save(ctx, eng, dir, []string{ref}, logf)
	if err != nil || len(res.Written) != 1 || filepath.Base(res.Written[0]) != images.ArchiveName(ref) {
		t.Fatalf("save: %+v, %v", res, err)
	}
	// An older image's archive goes at the next save; other files stay.
	older := filepath.Join(dir, images.ArchiveName("fencecheck/archive-test:older"))
	other := filepath.Join(dir, "README")
	os.WriteFile(older, []byte("x"), 0o644)
	os.WriteFile(other, []byte("x"), 0o644)
	if res, err := images.Save(ctx, eng, dir, []string{ref}, logf); err != nil || len(res.Kept) != 1 || len(res.Written) != 0 || len(res.Removed) != 1 {
		t.Errorf("second save: %+v, %v; want the archive kept and the older one removed", res, err)
	}
	if _, err := os.Stat(older); err == nil {
		t.Errorf("%s is still there", older)
	}
	if err := os.Remove(other); err != nil {
		t.Errorf("save removed a file that is not an archive: %v", err)
	}
	if err := eng.Remove(ctx, ref); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, nil, "images", "load", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "loaded "+ref) {
		t.Fatalf("images load: exit %d, %q: %s", r.code, r.stdout, r.stderr)
	}
	after, err := eng.Inspect(ctx, ref)
	if err != nil || after.ID != before.ID {
		t.Fatalf("after load: %v, ID %s, want %s", err, after.ID, before.ID)
	}
	r = runCLI(t, nil, "images", "load", dir)
	if r.code != 0 || strings.Contains(r.stdout, "loaded") || !strings.Contains(r.stderr, "0 images loaded, 1 there already") {
		t.Errorf("second load: exit %d, %q: %s", r.code, r.stdout, r.stderr)
	}

	empty := t.TempDir()
	if r := runCLI(t, nil, "images", "load", empty); r.code != exitHarness || !strings.Contains(r.stderr, "no image archives") {
		t.Errorf("load of an empty directory: exit %d: %s", r.code, r.stderr)
	}
	os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("x"), 0o644)
	if r := runCLI(t, nil, "images", "load", empty); r.code != exitBadArgs || !strings.Contains(r.stderr, "notes.txt: not an image archive to load") {
		t.Errorf("load of a directory with another file: exit %d: %s", r.code, r.stderr)
	}
	if r := runCLI(t, nil, "images", "save"); r.code != 254 || !strings.Contains(r.stderr, "images save takes one directory") {
		t.Errorf("save without a directory: exit %d: %s", r.code, r.stderr)
	}
}

// images tags prints the tags build would make, without the Engine.
func TestImagesTags(t *testing.T) {
	r := runCLI(t, []string{"DOCKER_HOST=tcp://127.0.0.1:1"}, "images", "tags")
	want := strings.Join([]string{images.BaseRef(), images.EtcdRef(), images.ConsulRef(), images.ZooKeeperRef()}, "\n") + "\n"
	if r.code != 0 || r.stdout != want {
		t.Errorf("images tags: exit %d, %q, want %q: %s", r.code, r.stdout, want, r.stderr)
	}
	if r := runCLI(t, nil, "images", "tags", "etcd@nope"); r.code != 254 {
		t.Errorf("images tags etcd@nope: exit %d, want 254", r.code)
	}
}

// images build --all-versions adds every other version of the kinds built;
// --client-dir and --all-versions go with build only.
func TestImagesBuildAllVersionsArgs(t *testing.T) {
	got := imageset.WithAllVersions([]string{"etcd", "consul@1.13.9"})
	want := []string{"etcd", "consul@1.13.9"}
	for i, v := range images.Versions("etcd") {
		if i > 0 {
			want = append(want, "etcd@"+v.Name)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("withAllVersions = %q, want %q", got, want)
	}
	if all := imageset.WithAllVersions(nil); !slices.Contains(all, "consul@1.13.9") || !slices.Contains(all, "zookeeper") || slices.Contains(all, "kubernetes") {
		t.Errorf("imageset.WithAllVersions() = %q: want the default kinds and their versions, not kubernetes", all)
	}
	for _, args := range [][]string{{"images", "list", "--client-dir", "x"}, {"images", "--all-versions", "prune"}} {
		if r := runCLI(t, nil, args...); r.code != 254 || !strings.Contains(r.stderr, "go with images build") {
			t.Errorf("%q: exit %d: %s", args, r.code, r.stderr)
		}
	}
}

// images build --client-dir builds a client program's image (after its
// build step) and prints its tag; a second build finds it; a directory
// without client.json is refused with 254.
func TestImagesBuildClientDir(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	dir := example("sh-redis")
	r := runCLI(t, nil, "images", "build", "--client-dir", dir)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "fencecheck/client:") || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("images build --client-dir: exit %d, %q: %s", r.code, r.stdout, r.stderr)
	}
	again := runCLI(t, nil, "images", "build", "--client-dir", dir)
	if again.code != 0 || again.stdout != r.stdout {
		t.Errorf("second build: exit %d, %q, want %q", again.code, again.stdout, r.stdout)
	}
	if bad := runCLI(t, nil, "images", "build", "--client-dir", t.TempDir()); bad.code != 254 || !strings.Contains(bad.stderr, "client.json") {
		t.Errorf("a directory without client.json: exit %d: %s", bad.code, bad.stderr)
	}
}

// An archive that carries a tag besides its own, planted there by whoever
// could write the cache directory, is refused by images load (254), and
// the Engine's tags are as they were: the planted tag, which names an
// image the Engine has, still names that image, and the archive's own
// image is not loaded. So is an archive holding another image than its
// name says. On real images made here (tiny imports), removed after.
func TestImagesLoadRefusesPlantedTag(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	ctx := context.Background()
	eng, err := docker.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for i, c := range []struct {
		name string
		tags func(own, victim string) []string
	}{
		{"a tag planted beside its own", func(own, victim string) []string { return []string{own, victim} }},
		{"another image's tag only", func(own, victim string) []string { return []string{victim} }},
	} {
		stamp := time.Now().UnixNano()
		own := fmt.Sprintf("fencecheck/archive-test:%d-%d-own", stamp, i)
		victim := fmt.Sprintf("fencecheck/archive-test:%d-%d-victim", stamp, i)
		importTinyImage(t, eng, own)
		victimBefore := importTinyImage(t, eng, victim)
		dir := t.TempDir()
		if _, err := images.Save(ctx, eng, dir, []string{own}, t.Logf); err != nil {
			t.Fatal(err)
		}
		archive := filepath.Join(dir, images.ArchiveName(own))
		genuine, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Remove(ctx, own); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(archive, withRepoTags(t, genuine, c.tags(own, victim)), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, nil, "images", "load", dir)
		if r.code != exitBadArgs || !strings.Contains(r.stderr, victim) {
			t.Errorf("%s: images load: exit %d: %s; want 254 naming %s", c.name, r.code, r.stderr, victim)
		}
		if _, err := eng.Inspect(ctx, own); err == nil {
			t.Errorf("%s: %s was loaded", c.name, own)
		}
		if after, err := eng.Inspect(ctx, victim); err != nil || after.ID != victimBefore {
			t.Errorf("%s: %s is now %s (%v), was %s", c.name, victim, after.ID, err, victimBefore)
		}
	}
}

// importTinyImage makes ref, a one-file image labelled as fencecheck's
// test images are, and returns its ID; the image goes when the test ends
// (its tag, and its ID should a load have moved the tag).
func importTinyImage(t *testing.T, eng *docker.Engine, ref string) string {
	t.Helper()
	ctx := context.Background()
	var rootfs bytes.Buffer
	tw := tar.NewWriter(&rootfs)
	tw.WriteHeader(&tar.Header{Name: "hello", Mode: 0o644, Size: int64(len(ref))})
	tw.Write([]byte(ref))
	tw.Close()
	if err := eng.Import(ctx, &rootfs, ref, []string{"LABEL " + images.LabelImage + "=archive-test"}, "fencecheck test"); err != nil {
		t.Fatal(err)
	}
	info, err := eng.Inspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.Remove(ctx, ref)
		eng.Remove(ctx, info.ID)
	})
	return info.ID
}

// withRepoTags is the docker save archive a with its manifest's RepoTags
// replaced by tags.
func withRepoTags(t *testing.T, a []byte, tags []string) []byte {
	t.Helper()
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(a)), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "manifest.json" {
			var items []map[string]any
			if err := json.Unmarshal(body, &items); err != nil || len(items) != 1 {
				t.Fatalf("manifest.json %s: %v", body, err)
			}
			items[0]["RepoTags"] = tags
			body, _ = json.Marshal(items)
			h.Size = int64(len(body))
		}
		tw.WriteHeader(h)
		tw.Write(body)
	}
	tw.Close()
	return out.Bytes()
}

// images load refuses, with 254 and what is wrong, before it reaches the
// Engine (none answers here): an archive that is a FIFO, a link or empty,
// and one whose manifest names another tag than its file name.
func TestImagesLoadRefusesBadArchives(t *testing.T) {
	fencecheckBinary(t) // built before the clock starts
	ref := "fencecheck/base:6500e7eff356"
	for _, c := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "named pipe"},
		{"link", func(p string) error { return os.Symlink("/dev/zero", p) }, "symbolic link"},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o644) }, "is empty"},
		{"another tag", func(p string) error { return os.WriteFile(p, tinyArchive("fencecheck/worker:1"), 0o644) }, "fencecheck/worker:1"},
	} {
		dir := t.TempDir()
		if err := c.make(filepath.Join(dir, images.ArchiveName(ref))); err != nil {
			t.Fatal(err)
		}
		done := make(chan cliResult, 1)
		go func() { done <- runCLI(t, []string{"DOCKER_HOST=tcp://127.0.0.1:1"}, "images", "load", dir) }()
		select {
		case r := <-done:
			if r.code != exitBadArgs || !strings.Contains(r.stderr, c.want) {
				t.Errorf("%s: images load: exit %d: %s; want 254 saying %q", c.name, r.code, r.stderr, c.want)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("%s: images load did not return within 20s", c.name)
		}
	}
}

// tinyArchive is an archive as docker save writes it of a one-layer image
// tagged ref.
func tinyArchive(ref string) []byte {
	cfg := []byte(`{"rootfs":{"type":"layers","diff_ids":[]}}`)
	sum := sha256.Sum256(cfg)
	id := hex.EncodeToString(sum[:])
	layer := strings.Repeat("a", 64) + "/layer.tar"
	man, _ := json.Marshal([]map[string]any{{"Config": id + ".json", "RepoTags": []string{ref}, "Layers": []string{layer}}})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		body []byte
	}{{id + ".json", cfg}, {layer, make([]byte, 1024)}, {"manifest.json", man}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body))})
		tw.Write(f.body)
	}
	tw.Close()
	return buf.Bytes()
}
