package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness/docker"
	"github.com/fencecheck/fencecheck/internal/images"
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
	if r := runCLI(t, nil, "images", "load", empty); r.code != exitHarness || !strings.Contains(r.stderr, "notes.txt is not an image archive") {
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
	got := withAllVersions([]string{"etcd", "consul@1.13.9"})
	want := []string{"etcd", "consul@1.13.9"}
	for i, v := range images.Versions("etcd") {
		if i > 0 {
			want = append(want, "etcd@"+v.Name)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("withAllVersions = %q, want %q", got, want)
	}
	if all := withAllVersions(nil); !slices.Contains(all, "consul@1.13.9") || !slices.Contains(all, "zookeeper") || slices.Contains(all, "kubernetes") {
		t.Errorf("withAllVersions() = %q: want the default kinds and their versions, not kubernetes", all)
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
