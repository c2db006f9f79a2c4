package images

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

func TestRefsAreContentHashes(t *testing.T) {
	if !regexp.MustCompile(`^fencecheck/base:[0-9a-f]{12}$`).MatchString(BaseRef()) {
		t.Errorf("base ref %s", BaseRef())
	}
	if BaseRef() != BaseRef() || EtcdRef() != EtcdRef() {
		t.Errorf("refs are not stable")
	}
	if !strings.HasPrefix(EtcdRef(), "fencecheck/etcd:"+EtcdVersion()+"-") || !strings.HasPrefix(EtcdVersion(), "3.6.") {
		t.Errorf("etcd ref %s (version %s), want a 3.6.x server", EtcdRef(), EtcdVersion())
	}
	if !regexp.MustCompile(`^fencecheck/zookeeper:3\.8\.0-[0-9a-f]{12}$`).MatchString(ZooKeeperRef()) || ZooKeeperRef() != ZooKeeperRef() {
		t.Errorf("zookeeper ref %s", ZooKeeperRef())
	}
	if df := string(mustRead("zookeeper/Dockerfile.txt")); !strings.Contains(df, "FROM ${BASE}") || !strings.Contains(df, "zookeeper default-jre-headless") {
		t.Errorf("zookeeper recipe: %s", df)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("binary one"), 0o755)
	os.WriteFile(b, []byte("binary two"), 0o755)
	ra, err := WorkerRef(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := WorkerRef(b)
	ra2, _ := WorkerRef(a)
	if ra == rb || ra != ra2 {
		t.Errorf("worker refs %s %s %s: want one per binary content", ra, rb, ra2)
	}
	if _, err := WorkerRef(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("missing binary: no error")
	}
}

func TestHashSeparatesParts(t *testing.T) {
	if hashOf([]byte("ab"), []byte("c")) == hashOf([]byte("a"), []byte("bc")) {
		t.Errorf("hashOf does not separate its parts")
	}
}

// Every line of the etcd version table is a recipe that says what it
// builds: a Go module that requires the version the line names, or a
// Dockerfile FROM the base; each has its own tag.
func TestEtcdVersionTable(t *testing.T) {
	vs := Versions(Etcd)
	if len(vs) < 5 || vs[0].Name != "3.6.16" || EtcdRef() != versionRef(vs[0], Etcd) || EtcdVersion() != "3.6.16" {
		t.Fatalf("table %+v: want 3.6.16 first (the default image)", vs)
	}
	refs := map[string]string{}
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			ref := versionRef(v, Etcd)
			if !regexp.MustCompile(`^fencecheck/etcd:` + regexp.QuoteMeta(v.Name) + `-[0-9a-f]{12}$`).MatchString(ref) {
				t.Errorf("ref %s", ref)
			}
			if other, dup := refs[ref]; dup {
				t.Errorf("ref %s also %s's", ref, other)
			}
			refs[ref] = v.Name
			var names []string
			for _, f := range recipeFiles(v) {
				names = append(names, filepath.Base(f))
			}
			if isDockerfile(v) {
				df := string(mustRead(v.Dir + "/Dockerfile.txt"))
				if !strings.Contains(df, "FROM ${BASE}") || !strings.Contains(df, "/usr/local/bin/etcd") {
					t.Errorf("%s: %s", v.Dir, df)
				}
				return
			}
			mod := string(mustRead(v.Dir + "/go.mod.txt"))
			want := "go.etcd.io/etcd/server/v3 v" + v.Server
			if v.Pkg != "." {
				want = v.Pkg + " " + strings.Fields(v.Source)[1]
			}
			if !strings.Contains(mod, "require "+want+"\n") {
				t.Errorf("%s/go.mod.txt does not require %s", v.Dir, want)
			}
			if !strings.Contains(v.Source, strings.Fields(want)[1]) {
				t.Errorf("source %q does not name %s", v.Source, want)
			}
			if len(names) != 3 || names[0] != "go.mod.txt" || names[1] != "go.sum.txt" {
				t.Errorf("%s holds %v: want go.mod, go.sum (hashed first) and main.go or deps.go", v.Dir, names)
			}
		})
	}
}

func TestVersionKinds(t *testing.T) {
	cases := []struct {
		kind string
		ok   bool
	}{
		{"etcd", true}, {"etcd@3.4.3", true}, {"etcd@debian", true}, {"worker", true},
		{"consul@1.14.11", true}, {"etcd@", false}, {"etcd@3.3.0", false}, {"zookeeper@3.8.0", false}, {"mysql", false},
	}
	for _, c := range cases {
		if err := CheckKind(c.kind); (err == nil) != c.ok {
			t.Errorf("CheckKind(%q) = %v, want ok %v", c.kind, err, c.ok)
		}
	}
	if VersionKind(Etcd, "3.6.16") != "etcd" || VersionKind(Etcd, "") != "etcd" || VersionKind(Etcd, "3.4.3") != "etcd@3.4.3" {
		t.Errorf("version kinds %s %s", VersionKind(Etcd, "3.6.16"), VersionKind(Etcd, "3.4.3"))
	}
	if k, v := SplitKind("etcd@debian"); k != "etcd" || v != "debian" {
		t.Errorf("SplitKind: %s %s", k, v)
	}
	if _, err := VersionRef(Etcd, "2.3.8"); err == nil {
		t.Errorf("VersionRef of an unknown version: no error")
	}
}

// Every Consul version is a module that requires the Consul it names and
// builds its root package; the default keeps the tag it always had.
func TestConsulVersionTable(t *testing.T) {
	vs := Versions(Consul)
	if len(vs) == 0 || vs[0].Name != "1.14.11" || ConsulRef() != versionRef(vs[0], Consul) || ConsulVersion() != "1.14.11" {
		t.Fatalf("table %+v: want 1.14.11 first (the default image)", vs)
	}
	for _, v := range vs {
		mod := string(mustRead(v.Dir + "/go.mod.txt"))
		if !regexp.MustCompile(`(?m)^\s*(require )?github\.com/hashicorp/consul v` + regexp.QuoteMeta(v.Server) + `$`).MatchString(mod) {
			t.Errorf("%s/go.mod.txt does not require github.com/hashicorp/consul v%s", v.Dir, v.Server)
		}
		if v.Pkg != "github.com/hashicorp/consul" || !strings.Contains(v.Source, "v"+v.Server) {
			t.Errorf("%s: package %s, source %q", v.Name, v.Pkg, v.Source)
		}
		if !regexp.MustCompile(`^fencecheck/consul:` + regexp.QuoteMeta(v.Name) + `-[0-9a-f]{12}$`).MatchString(versionRef(v, Consul)) {
			t.Errorf("ref %s", versionRef(v, Consul))
		}
	}
}

// The kubernetes image is kube-apiserver of the release its line names: a
// module that requires k8s.io/kubernetes at that version and replaces every
// k8s.io/* module required at v0.0.0 (the staging modules) with its
// v0.MINOR.PATCH release, stamped with the version, at
// /usr/local/bin/kube-apiserver; it is a kind to name, not one of the
// default build (make images).
func TestKubernetesVersionTable(t *testing.T) {
	vs := Versions(Kubernetes)
	if len(vs) != 1 || vs[0].Name != "1.37.2" || KubernetesVersion() != "1.37.2" || KubernetesRef() != versionRef(vs[0], Kubernetes) {
		t.Fatalf("table %+v: want 1.37.2", vs)
	}
	v := vs[0]
	if !regexp.MustCompile(`^fencecheck/kubernetes:1\.37\.2-[0-9a-f]{12}$`).MatchString(KubernetesRef()) {
		t.Errorf("ref %s", KubernetesRef())
	}
	if v.Pkg != "k8s.io/kubernetes/cmd/kube-apiserver" || v.Binary != "kube-apiserver" || versionServer(v, Kubernetes).binary != "kube-apiserver" {
		t.Errorf("package %s, binary %s", v.Pkg, v.Binary)
	}
	if !strings.Contains(v.Ldflags, "-X k8s.io/component-base/version.gitVersion=v"+v.Server+" ") {
		t.Errorf("ldflags %q do not stamp v%s", v.Ldflags, v.Server)
	}
	mod := string(mustRead(v.Dir + "/go.mod.txt"))
	if !regexp.MustCompile(`(?m)^\s*(require )?k8s\.io/kubernetes v` + regexp.QuoteMeta(v.Server) + `$`).MatchString(mod) {
		t.Errorf("%s/go.mod.txt does not require k8s.io/kubernetes v%s", v.Dir, v.Server)
	}
	staging := "v0." + strings.SplitN(v.Server, ".", 2)[1]
	replaced := regexp.MustCompile(`(?m)^\s*(k8s\.io/[a-z-]+) => (k8s\.io/[a-z-]+) (v\S+)$`).FindAllStringSubmatch(mod, -1)
	if len(replaced) < 25 || !strings.Contains(mod, "k8s.io/client-go => k8s.io/client-go "+staging+"\n") {
		t.Errorf("%s/go.mod.txt replaces %d modules, want the ~31 staging modules", v.Dir, len(replaced))
	}
	for _, r := range replaced {
		if r[1] != r[2] || r[3] != staging {
			t.Errorf("replace %s => %s %s: want %s %s", r[1], r[2], r[3], r[1], staging)
		}
	}
	var names []string
	for _, f := range recipeFiles(v) {
		names = append(names, filepath.Base(f))
	}
	if len(names) != 3 || names[0] != "go.mod.txt" || names[1] != "go.sum.txt" || names[2] != "deps.go.txt" {
		t.Errorf("%s holds %v", v.Dir, names)
	}
	if CheckKind(Kubernetes) != nil || CheckKind("kubernetes@1.37.2") != nil || CheckKind("kubernetes@1.36.0") == nil || CheckScratch(Kubernetes) == nil {
		t.Errorf("kinds: %v %v %v", CheckKind(Kubernetes), CheckKind("kubernetes@1.36.0"), CheckScratch(Kubernetes))
	}
	for _, k := range DefaultKinds {
		if k == Kubernetes {
			t.Errorf("default kinds %v include kubernetes", DefaultKinds)
		}
	}
	if len(DefaultKinds) != len(Kinds)-1 {
		t.Errorf("default kinds %v, kinds %v: want all kinds but kubernetes", DefaultKinds, Kinds)
	}
}

// An archive's name is its tag, and the tag comes back from the name.
func TestArchiveNames(t *testing.T) {
	for _, ref := range []string{"fencecheck/etcd:3.6.16-1a2b3c4d5e6f", "fencecheck/base:6500e7eff356", "fencecheck/client:3fa4e5ac9e5f", "fencecheck/etcd:debian_3.4-abc"} {
		name := ArchiveName(ref)
		if strings.ContainsAny(name, "/:") {
			t.Errorf("%s: name %s", ref, name)
		}
		if got, ok := archiveRef(name); !ok || got != ref {
			t.Errorf("%s: %s back is %q, %v", ref, name, got, ok)
		}
	}
	for _, bad := range []string{"notes.txt", "x.tar", "@tag.tar", "repo@.tar", "fencecheck_etcd@3.6.tar.gz"} {
		if ref, ok := archiveRef(bad); ok {
			t.Errorf("%s taken as an archive of %s", bad, ref)
		}
	}
}

// fakeImages is an engine with the images of tags, each holding files; its
// other methods are not for these tests (they panic).
type fakeImages struct {
	runtime.Images
	tags       map[string]map[string][]byte
	inspectErr error // Inspect's error for every image, when not nil
}

func (f fakeImages) Inspect(_ context.Context, ref string) (runtime.ImageInfo, error) {
	if f.inspectErr != nil {
		return runtime.ImageInfo{}, f.inspectErr
	}
	if _, ok := f.tags[ref]; !ok {
		return runtime.ImageInfo{}, fmt.Errorf("engine says no %s: %w", ref, runtime.ErrImageNotFound)
	}
	return runtime.ImageInfo{ID: "sha256:" + ref}, nil
}

func (f fakeImages) ReadFile(_ context.Context, image, path string) ([]byte, error) {
	data, ok := f.tags[image][path]
	if !ok {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	return data, nil
}

// The builder reads the engine's sentinels: an image the engine lacks
// does not exist (any other failure is an error), and a file an image
// lacks is named as missing.
func TestBuilderReadsEngineSentinels(t *testing.T) {
	ctx := context.Background()
	b := &Builder{Engine: fakeImages{tags: map[string]map[string][]byte{"fencecheck/etcd:x": {"/usr/local/bin/etcd": []byte("ELF")}}}}
	if ok, err := b.Exists(ctx, "fencecheck/etcd:x"); !ok || err != nil {
		t.Errorf("Exists of a present image: %v, %v", ok, err)
	}
	if ok, err := b.Exists(ctx, "fencecheck/etcd:y"); ok || err != nil {
		t.Errorf("Exists of a missing image: %v, %v; want false and no error", ok, err)
	}
	if data, err := b.copyOut(ctx, "fencecheck/etcd:x", "/usr/local/bin/etcd"); string(data) != "ELF" || err != nil {
		t.Errorf("copyOut: %q, %v", data, err)
	}
	if _, err := b.copyOut(ctx, "fencecheck/etcd:x", "/usr/local/bin/consul"); err == nil || err.Error() != "images: /usr/local/bin/consul not found in fencecheck/etcd:x" {
		t.Errorf("copyOut of a missing file: %v", err)
	}
	down := &Builder{Engine: fakeImages{inspectErr: errors.New("connection refused")}}
	if ok, err := down.Exists(ctx, "fencecheck/etcd:x"); ok || err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Exists on a failing engine: %v, %v; want its error", ok, err)
	}
}
