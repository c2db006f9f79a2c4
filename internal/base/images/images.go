// Package images builds fencecheck's container images on the local Docker
// Engine (through runtime.Images), with no registry:
//
//   - base: Debian (bookworm, minbase) made by debootstrap from Debian's own
//     mirror, with iptables, iproute2, procps, redis-server and libfaketime,
//     imported as an image (base/build.sh);
//   - etcd: an etcd server, one image per version of the etcd version
//     table (versions.go): built here from a Go module
//     (go.etcd.io/etcd/server/v3's etcdmain package, etcd/VERSION/*.txt),
//     FROM scratch (the static binary, an empty /tmp: scratchDockerfile),
//     or the base plus Debian's etcd-server package
//     (etcd/debian/Dockerfile.txt);
//   - consul: a Consul server built here from the Go module
//     github.com/hashicorp/consul v1.14.x, the last MPL-2.0 line (the main
//     package at the module's root; consul/*.txt), FROM scratch;
//   - zookeeper: the base plus Debian's zookeeper package (3.8.0 in
//     bookworm) and its headless OpenJDK, installed by apt in a docker build
//     FROM the base (zookeeper/Dockerfile.txt);
//   - kubernetes: the base plus kube-apiserver, built here from the Go
//     module k8s.io/kubernetes (cmd/kube-apiserver, CGO_ENABLED=0; its
//     staging modules replaced by their releases: kubernetes/VERSION/*.txt)
//     at /usr/local/bin/kube-apiserver, with no etcd of its own (it runs
//     beside an etcd image's server). Its compile takes 13 minutes of CPU
//     time (7 to 13 minutes on 2 cores), so `images build` with no kinds
//     (make images) leaves it out: it is built when named, or on first use;
//   - worker: the worker binary (cmd/fencecheck-worker, or fencecheck
//     itself when there is none) FROM scratch, which runs each lock client
//     as `fencecheck worker` (and the proxy resource's proxy, client-check's
//     probe).
//
// So the images of a run of etcd or Consul with the worker need no base,
// and no debootstrap: the base is built for the images that stand on it
// (Debian's packages, kube-apiserver, a client image) and for the network
// helpers of a run whose faults change a node's network.
//
// Each image is tagged by a hash of everything it is made from (recipe,
// module files, the base's tag or the scratch image's Dockerfile, binary:
// the worker image's tag hashes its Dockerfile and the worker binary only,
// so an edit of the harness or the report leaves it as it is), and a build
// whose tag already exists is skipped, so a rebuild with nothing changed
// takes well under a second.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

//go:embed base/build.sh etcd
//go:embed consul
//go:embed zookeeper/Dockerfile.txt
//go:embed kubernetes
var recipes embed.FS

// LabelImage marks fencecheck's images with their kind (base, etcd, consul,
// zookeeper, kubernetes, worker).
const LabelImage = "fencecheck.image"

// ErrBuild: an image could not be built.
var ErrBuild = errors.New("image build failed")

// Builder builds images on one Engine.
type Builder struct {
	Engine runtime.Images
	// Log receives one line per step (what is built, skipped, how long it
	// took). Nil logs nothing.
	Log func(format string, args ...any)
	// Output receives the output of the slow build tools (debootstrap, go
	// build). Nil discards it.
	Output io.Writer

	mu    sync.Mutex
	ready map[string]bool // tags known to exist
}

func (b *Builder) logf(format string, args ...any) {
	if b.Log != nil {
		b.Log(format, args...)
	}
}

func (b *Builder) output() io.Writer {
	if b.Output == nil {
		return io.Discard
	}
	return b.Output
}

func hashOf(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func mustRead(name string) []byte {
	b, err := recipes.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: cannot be missing
	}
	return b
}

// BaseRef is the tag of the base image this binary builds.
func BaseRef() string {
	return "fencecheck/base:" + hashOf(mustRead("base/build.sh"))
}

// EtcdRef is the tag of the default etcd image this binary builds.
func EtcdRef() string { return versionRef(Versions(Etcd)[0], Etcd) }

// ConsulRef is the tag of the default consul image this binary builds.
func ConsulRef() string { return versionRef(Versions(Consul)[0], Consul) }

// KubernetesRef is the tag of the default kubernetes image this binary
// builds.
func KubernetesRef() string { return versionRef(Versions(Kubernetes)[0], Kubernetes) }

// ZooKeeperRef is the tag of the zookeeper image this binary builds.
func ZooKeeperRef() string {
	return fmt.Sprintf("fencecheck/zookeeper:%s-%s", ZooKeeperVersion(), hashOf([]byte(BaseRef()), mustRead("zookeeper/Dockerfile.txt")))
}

// workerDockerfile is the worker image's Dockerfile: the binary FROM
// scratch, where the harness runs its commands.
var workerDockerfile = scratchDockerfile("fencecheck", "/usr/local/bin/fencecheck", Worker, "")

// WorkerRef is the tag of the worker image for the worker binary at path:
// a hash of the image's Dockerfile and the binary.
func WorkerRef(path string) (string, error) {
	bin, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("images: worker binary: %w", err)
	}
	return "fencecheck/worker:" + hashOf([]byte(workerDockerfile), bin), nil
}

// Exists reports whether the Engine has an image with this tag.
func (b *Builder) Exists(ctx context.Context, ref string) (bool, error) {
	_, err := b.Engine.Inspect(ctx, ref)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, runtime.ErrImageNotFound) {
		return false, nil
	}
	return false, fmt.Errorf("images: inspect %s: %w", ref, err)
}

// EnsureBase builds the base image unless it exists, and returns its tag.
func (b *Builder) EnsureBase(ctx context.Context) (string, error) {
	ref := BaseRef()
	return ref, b.ensure(ctx, ref, b.buildBase)
}

// EnsureEtcd builds the default etcd image unless it exists.
func (b *Builder) EnsureEtcd(ctx context.Context) (string, error) {
	return b.ensureVersion(ctx, Etcd, Versions(Etcd)[0])
}

// EnsureConsul builds the default consul image unless it exists.
func (b *Builder) EnsureConsul(ctx context.Context) (string, error) {
	return b.ensureVersion(ctx, Consul, Versions(Consul)[0])
}

// EnsureKubernetes builds the default kubernetes image (and the base)
// unless it exists: kube-apiserver compiled from k8s.io/kubernetes, 7 to 13
// minutes on 2 cores the first time.
func (b *Builder) EnsureKubernetes(ctx context.Context) (string, error) {
	return b.ensureVersion(ctx, Kubernetes, Versions(Kubernetes)[0])
}

// EnsureZooKeeper builds the zookeeper image (and the base) unless it
// exists: a docker build of zookeeper/Dockerfile.txt FROM the base, whose
// apt-get install of Debian's packages takes a few minutes the first time.
func (b *Builder) EnsureZooKeeper(ctx context.Context) (string, error) {
	base, err := b.EnsureBase(ctx)
	if err != nil {
		return "", err
	}
	ref := ZooKeeperRef()
	return ref, b.ensure(ctx, ref, func(ctx context.Context, ref string) error {
		b.logf("  apt-get install of Debian's zookeeper and OpenJDK (3 to 5 minutes the first time)")
		dockerfile := fmt.Sprintf("%s\n%s", mustRead("zookeeper/Dockerfile.txt"), labels(ZooKeeper, ZooKeeperVersion()))
		return b.buildContext(ctx, ref, dockerfile, nil, map[string]string{"BASE": base})
	})
}

// EnsureWorker builds the worker image for the worker binary at path unless
// it exists: FROM scratch, the binary at /usr/local/bin/fencecheck, where
// the harness runs its commands (worker, proxy, client-probe), and an empty
// /tmp. The binary must be static (CGO_ENABLED=0, as make build builds it):
// the image has no libc.
func (b *Builder) EnsureWorker(ctx context.Context, path string) (string, error) {
	ref, err := WorkerRef(path)
	if err != nil {
		return "", err
	}
	return ref, b.ensure(ctx, ref, func(ctx context.Context, ref string) error {
		bin, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		b.logf("  worker binary %s (%.1f MB)", path, float64(len(bin))/1e6)
		if err := checkStatic(bin, path); err != nil {
			return err
		}
		return b.buildScratchImage(ctx, ref, workerDockerfile, "fencecheck", bin)
	})
}

// Ensure builds an image by kind name: base, etcd, consul, zookeeper,
// kubernetes, or worker (which needs the fencecheck binary's path); KIND@VERSION
// Ref is the tag kind's image would have (KIND or KIND@VERSION), built or
// not; the worker's needs the worker binary. It is what images tags prints:
// a cache key that changes exactly when an image would.
func Ref(kind, workerBinary string) (string, error) {
	if k, name := SplitKind(kind); name != "" {
		return VersionRef(k, name)
	}
	switch kind {
	case Base:
		return BaseRef(), nil
	case Etcd:
		return EtcdRef(), nil
	case Consul:
		return ConsulRef(), nil
	case ZooKeeper:
		return ZooKeeperRef(), nil
	case Kubernetes:
		return KubernetesRef(), nil
	case Worker:
		return WorkerRef(workerBinary)
	}
	return "", fmt.Errorf("images: unknown image %q (valid: %s)", kind, strings.Join(Kinds, ", "))
}

// (VersionKind) names a version of a kind's version table.
func (b *Builder) Ensure(ctx context.Context, kind, workerBinary string) (string, error) {
	if k, name := SplitKind(kind); name != "" {
		v, ok := LookupVersion(k, name)
		if !ok {
			return "", fmt.Errorf("images: unknown image %q: %s has no version %q (available: %s)", kind, k, name, VersionNames(k))
		}
		return b.ensureVersion(ctx, k, v)
	}
	switch kind {
	case Base:
		return b.EnsureBase(ctx)
	case Etcd:
		return b.EnsureEtcd(ctx)
	case Consul:
		return b.EnsureConsul(ctx)
	case ZooKeeper:
		return b.EnsureZooKeeper(ctx)
	case Kubernetes:
		return b.EnsureKubernetes(ctx)
	case Worker:
		return b.EnsureWorker(ctx, workerBinary)
	}
	return "", fmt.Errorf("images: unknown image %q (valid: %s)", kind, strings.Join(Kinds, ", "))
}

func (b *Builder) ensure(ctx context.Context, ref string, build func(context.Context, string) error) error {
	b.mu.Lock()
	known := b.ready[ref]
	b.mu.Unlock()
	if known {
		return nil
	}
	ok, err := b.Exists(ctx, ref)
	if err != nil {
		return err
	}
	if ok {
		b.logf("image %s: up to date", ref)
		b.markReady(ref)
		return nil
	}
	unlock, built, err := b.lockMissing(ctx, ref)
	if err != nil || built {
		return err
	}
	defer unlock()
	start := time.Now()
	b.logf("image %s: building", ref)
	if err := build(ctx, ref); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBuild, ref, err)
	}
	b.logf("image %s: built in %.1fs", ref, time.Since(start).Seconds())
	b.markReady(ref)
	return nil
}

// lockMissing takes ref's build lock (lockRef) and looks again: built is
// true, and the lock released, when another process built the image while
// this one waited.
func (b *Builder) lockMissing(ctx context.Context, ref string) (unlock func(), built bool, err error) {
	unlock, err = lockRef(ctx, ref, func(path string) {
		b.logf("image %s: another fencecheck process is building it; waiting (lock %s)", ref, path)
	})
	if err != nil {
		return nil, false, err
	}
	ok, err := b.Exists(ctx, ref)
	if err != nil || ok {
		unlock()
		if ok {
			b.logf("image %s: built by another process", ref)
			b.markReady(ref)
		}
		return nil, ok, err
	}
	return unlock, false, nil
}

func (b *Builder) markReady(ref string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ready == nil {
		b.ready = map[string]bool{}
	}
	b.ready[ref] = true
}

func (b *Builder) buildBase(ctx context.Context, ref string) error {
	dir, err := os.MkdirTemp("", "fencecheck-base-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "build.sh")
	if err := os.WriteFile(script, mustRead("base/build.sh"), 0o755); err != nil {
		return err
	}
	rootfs := filepath.Join(dir, "rootfs.tar")
	b.logf("  debootstrap of Debian bookworm (about a minute; needs root and debootstrap)")
	cmd := exec.CommandContext(ctx, "bash", script, rootfs)
	cmd.Stdout, cmd.Stderr = b.output(), b.output()
	var tail tailBuffer
	cmd.Stderr = io.MultiWriter(b.output(), &tail)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("base/build.sh: %v: %s", err, tail.String())
	}
	f, err := os.Open(rootfs)
	if err != nil {
		return err
	}
	defer f.Close()
	return b.Engine.Import(ctx, f, ref, []string{
		"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LABEL " + LabelImage + "=" + Base,
	}, "fencecheck base (debootstrap bookworm minbase)")
}

// goServer is a server image built from Go source: a module recipe
// embedded from images/KIND/ written to a build directory, `go build` of pkg
// in it, and the binary alone FROM scratch, or added to the base image.
type goServer struct {
	kind    string
	version func() string
	ref     func() string
	files   map[string]string // embedded recipe file -> name in the build directory
	pkg     string            // what go build builds, in the build directory
	ldflags string            // added to go build's -ldflags "-s -w"
	binary  string            // the binary's name in /usr/local/bin
	onBase  bool              // FROM the base image, else FROM scratch
	note    string            // what the log says while it compiles
}

// goServers are the Go-built servers of the default images, by kind.
var goServers = map[string]goServer{
	Etcd: versionServer(Versions(Etcd)[0], Etcd),
	// Consul: a module that requires github.com/hashicorp/consul, in which
	// `go build` builds the main package at that module's root (see
	// consul/1.14.11/deps.go.txt).
	Consul: versionServer(Versions(Consul)[0], Consul),
	// Kubernetes: a module that requires k8s.io/kubernetes, in which `go
	// build` builds its cmd/kube-apiserver (see
	// kubernetes/1.37.2/deps.go.txt).
	Kubernetes: versionServer(Versions(Kubernetes)[0], Kubernetes),
}

// compile builds a Go server's binary.
func (b *Builder) compile(ctx context.Context, s goServer) ([]byte, error) {
	dir, err := os.MkdirTemp("", "fencecheck-"+s.kind+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for src, dst := range s.files {
		if err := os.WriteFile(filepath.Join(dir, dst), mustRead(src), 0o644); err != nil {
			return nil, err
		}
	}
	gobin, err := goTool()
	if err != nil {
		return nil, err
	}
	b.logf("  go build of %s %s %s", s.kind, s.version(), s.note)
	start := time.Now()
	ldflags := "-s -w"
	if s.ldflags != "" {
		ldflags += " " + s.ldflags
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-trimpath", "-ldflags="+ldflags, "-o", s.binary, s.pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=-mod=readonly")
	var tail tailBuffer
	cmd.Stdout, cmd.Stderr = b.output(), io.MultiWriter(b.output(), &tail)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s: %v: %s", s.kind, err, tail.String())
	}
	b.logf("  %s compiled in %.1fs", s.kind, time.Since(start).Seconds())
	return os.ReadFile(filepath.Join(dir, s.binary))
}

// serverImage makes a compiled server's image: the binary FROM scratch,
// or added to the base image.
func (b *Builder) serverImage(ctx context.Context, s goServer, bin []byte) error {
	dest := "/usr/local/bin/" + s.binary
	if s.onBase {
		return b.buildOnBase(ctx, s.ref(), s.kind, s.version(), map[string][]byte{s.binary: bin}, dest)
	}
	return b.buildScratchImage(ctx, s.ref(), scratchDockerfile(s.binary, dest, s.kind, s.version()), s.binary, bin)
}

// ensureServer builds a Go server's image (and the base, if it stands on
// it) unless it exists.
func (b *Builder) ensureServer(ctx context.Context, s goServer) (string, error) {
	if s.onBase {
		if _, err := b.EnsureBase(ctx); err != nil {
			return "", err
		}
	}
	ref := s.ref()
	return ref, b.ensure(ctx, ref, func(ctx context.Context, _ string) error {
		bin, err := b.compile(ctx, s)
		if err != nil {
			return err
		}
		return b.serverImage(ctx, s, bin)
	})
}

// EnsureAll builds what is missing of the images of kinds (every kind of
// DefaultKinds, which leaves kubernetes out, at its default version when
// none is given; KIND@VERSION names another version) and of the base when
// one of them stands on it (StandsOnBase), overlapping the slow steps: the
// Go servers compile while debootstrap makes the base. It returns the
// kinds' tags in the order given (in DefaultKinds order when none is
// given), after the base's when one of them stands on it. An unknown kind
// or version is an error, before anything is built.
func (b *Builder) EnsureAll(ctx context.Context, workerBinary string, kinds ...string) ([]string, error) {
	type built struct {
		s      goServer
		bin    []byte
		unlock func()
	}
	order := kinds
	if len(order) == 0 {
		order = DefaultKinds
	}
	var servers []goServer // the Go servers among them, compiled beside the base
	needBase := false
	for _, k := range order {
		if err := CheckKind(k); err != nil {
			return nil, err
		}
		needBase = needBase || StandsOnBase(k)
		kind, name := SplitKind(k)
		if name == "" {
			if s, ok := goServers[kind]; ok {
				servers = append(servers, s)
			}
		} else if v, ok := LookupVersion(kind, name); ok && !isDockerfile(v) {
			servers = append(servers, versionServer(v, kind))
		}
	}
	var missing []goServer
	for _, s := range servers {
		exists, err := b.Exists(ctx, s.ref())
		if err != nil {
			return nil, err
		}
		if !exists {
			missing = append(missing, s)
		}
	}
	baseErr := make(chan error, 1)
	if needBase {
		go func() {
			_, err := b.EnsureBase(ctx)
			baseErr <- err
		}()
	} else {
		baseErr <- nil
	}
	var bins []built
	defer func() {
		for _, x := range bins {
			x.unlock()
		}
	}()
	var compileErr error
	for _, s := range missing {
		// Each under its build lock, held until its image is made.
		unlock, done, err := b.lockMissing(ctx, s.ref())
		if err != nil {
			compileErr = err
			break
		}
		if done {
			continue
		}
		b.logf("image %s: building", s.ref())
		bin, err := b.compile(ctx, s)
		if err != nil {
			unlock()
			compileErr = fmt.Errorf("%w: %s: %w", ErrBuild, s.ref(), err)
			break
		}
		bins = append(bins, built{s, bin, unlock})
	}
	if err := errors.Join(<-baseErr, compileErr); err != nil {
		return nil, err
	}
	for _, x := range bins {
		if err := b.serverImage(ctx, x.s, x.bin); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBuild, x.s.ref(), err)
		}
		b.logf("image %s: built", x.s.ref())
		b.markReady(x.s.ref())
	}
	var refs []string
	if needBase && order[0] != Base {
		order = append([]string{Base}, order...)
	}
	for _, kind := range order {
		ref, err := b.Ensure(ctx, kind, workerBinary)
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// StandsOnBase reports whether the image of kind (KIND or KIND@VERSION, a
// valid one) is built on the base image, which must then be built first
// (and be in any cache that holds it: building it checks the base's tag).
func StandsOnBase(kind string) bool {
	k, name := SplitKind(kind)
	switch k {
	case Base, ZooKeeper:
		return true
	case Etcd, Consul, Kubernetes:
		v, _ := LookupVersion(k, name)
		return onBase(v, k)
	}
	return false // the worker
}

// goTool finds the go command for building etcd, consul and kubernetes.
func goTool() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/local/go/bin/go", filepath.Join(os.Getenv("HOME"), "go/bin/go")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("the etcd, consul and kubernetes images are built from Go source and no `go` command was found (install Go, or put it on PATH)")
}

// labels is the Dockerfile line that labels an image of kind.
func labels(kind, version string) string {
	return fmt.Sprintf("LABEL %s=%s fencecheck.version=%q\n", LabelImage, kind, version)
}

// scratchDockerfile is the Dockerfile of an image FROM scratch that holds
// one static binary (name in the build context) at dest, an empty /tmp
// (mode 1777: Go's os.TempDir) and nothing else: no shell, no libc, no
// iptables (faults act from outside a node: runtime.Commands.NetExec). Its
// text is part of the image's tag.
func scratchDockerfile(name, dest, kind, version string) string {
	return fmt.Sprintf("FROM scratch\nCOPY %s %s\nCOPY rootfs/ /\nWORKDIR /\n%s", name, dest, labels(kind, version))
}

// buildScratchImage builds an image tagged ref from scratchDockerfile's
// dockerfile, its binary named name in the build context.
func (b *Builder) buildScratchImage(ctx context.Context, ref, dockerfile, name string, bin []byte) error {
	return b.buildFiles(ctx, ref, dockerfile, map[string]File{name: {Data: bin, Mode: 0o755},
		"rootfs/": {Mode: 0o755}, "rootfs/tmp/": {Mode: 0o1777}}, nil)
}

// checkStatic refuses a binary that is not a static ELF executable (one
// linked dynamically names an interpreter, PT_INTERP, which an image FROM
// scratch does not have); what names it in the error.
func checkStatic(bin []byte, what string) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("images: %s is not an ELF binary: %w", what, err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("images: %s is linked dynamically; an image FROM scratch needs a static binary (build it with CGO_ENABLED=0)", what)
		}
	}
	return nil
}

// buildOnBase builds an image FROM the base image that adds one file as an
// executable at dest, with the legacy builder (which needs no registry).
func (b *Builder) buildOnBase(ctx context.Context, ref, kind, version string, files map[string][]byte, dest string) error {
	var name string
	for n := range files {
		name = n
	}
	dockerfile := fmt.Sprintf("FROM %s\nCOPY %s %s\n%s", BaseRef(), name, dest, labels(kind, version))
	return b.buildContext(ctx, ref, dockerfile, files, nil)
}

// buildContext builds an image tagged ref from a Dockerfile and the files of
// its context (made executable), with the legacy builder.
func (b *Builder) buildContext(ctx context.Context, ref, dockerfile string, files map[string][]byte, args map[string]string) error {
	fs := make(map[string]File, len(files))
	for n, d := range files {
		fs[n] = File{Data: d, Mode: 0o755}
	}
	return b.buildFiles(ctx, ref, dockerfile, fs, args)
}

// buildFiles builds an image tagged ref from a Dockerfile and the files of
// its context, each with its mode, with the legacy builder. A name that
// ends in "/" is an empty directory.
func (b *Builder) buildFiles(ctx context.Context, ref, dockerfile string, files map[string]File, args map[string]string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(n string, b []byte, mode int64) error {
		hdr := &tar.Header{Name: n, Mode: mode, Size: int64(len(b)), ModTime: time.Unix(0, 0)}
		if strings.HasSuffix(n, "/") {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := add("Dockerfile", []byte(dockerfile), 0o644); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := add(n, files[n].Data, files[n].Mode); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return b.Engine.Build(ctx, &buf, ref, args)
}

// tailBuffer keeps the last 2 KiB written to it, for error messages.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }

// Info describes one fencecheck image on the Engine.
type Info struct {
	Ref     string
	Kind    string
	ID      string
	Size    int64
	Created time.Time
	Current bool // the tag this binary would build
}

// List returns fencecheck's images on the Engine (those labelled
// fencecheck.image), newest first. workerBinary, if not empty, marks the
// worker image of that binary as current.
func List(ctx context.Context, eng runtime.Images, workerBinary string) ([]Info, error) {
	sums, err := eng.List(ctx, LabelImage)
	if err != nil {
		return nil, fmt.Errorf("images: list: %w", err)
	}
	current := map[string]bool{BaseRef(): true, EtcdRef(): true, ConsulRef(): true, ZooKeeperRef(): true}
	for _, kind := range []string{Etcd, Consul, Kubernetes} {
		for _, v := range Versions(kind) {
			current[versionRef(v, kind)] = true
		}
	}
	if workerBinary != "" {
		if ref, err := WorkerRef(workerBinary); err == nil {
			current[ref] = true
		}
	}
	var out []Info
	for _, s := range sums {
		for _, tag := range s.Tags {
			out = append(out, Info{Ref: tag, Kind: s.Labels[LabelImage], ID: s.ID, Size: s.Size,
				Created: s.Created, Current: current[tag]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out, nil
}

// Prune removes fencecheck's images that this binary does not use (older
// worker images, images of older recipes), and returns their tags. Images
// still used by a container are left alone and reported in the error.
func Prune(ctx context.Context, eng runtime.Images, workerBinary string) ([]string, error) {
	list, err := List(ctx, eng, workerBinary)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	// Newest first: children (worker, etcd, consul, zookeeper) go before
	// the base they build on.
	for _, i := range list {
		if i.Current {
			continue
		}
		if err := eng.Remove(ctx, i.Ref); err != nil {
			errs = append(errs, fmt.Errorf("images: remove %s: %w", i.Ref, err))
			continue
		}
		removed = append(removed, i.Ref)
	}
	return removed, errors.Join(errs...)
}
