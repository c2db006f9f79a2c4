package images

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// ServerVersion is one version of a server image: the value of a run's
// --version and the recipe its image is built from. A version is one line
// of a table (etcdVersions) and one folder of recipe files under images/:
//   - a Go module (go.mod.txt, go.sum.txt and main.go.txt or deps.go.txt,
//     written to a build directory without their .txt) in which `go build`
//     builds the package Pkg;
//   - or a Dockerfile.txt FROM the base (Debian's packages, as zookeeper's).
type ServerVersion struct {
	// Name is the value of --version ("3.6.16", "debian").
	Name string
	// Server is the version the server reports ("3.4.23" for Debian's).
	Server string
	// Source says where the server comes from, in a few words.
	Source string
	// Pkg is what `go build` builds in the module's directory; empty for a
	// Dockerfile recipe.
	Pkg string

	dir string // the recipe's folder under images/
}

// etcdVersions lists the etcd servers the etcd target can run; the first is
// the default. Each is built on first use (a run, or `images build`), in
// about a minute (a Go module) or a few (Debian's package).
var etcdVersions = []ServerVersion{
	{Name: "3.6.16", Server: "3.6.16", Source: "go.etcd.io/etcd/server/v3 v3.6.16", Pkg: ".", dir: "etcd/3.6.16"},
	{Name: "3.7.3", Server: "3.7.3", Source: "go.etcd.io/etcd/server/v3 v3.7.3 (the newest 3.7.x on the module proxy)", Pkg: ".", dir: "etcd/3.7.3"},
	{Name: "3.5.35", Server: "3.5.35", Source: "go.etcd.io/etcd/server/v3 v3.5.35 (the newest 3.5.x on the module proxy)", Pkg: ".", dir: "etcd/3.5.35"},
	{Name: "3.4.3", Server: "3.4.3", Source: "go.etcd.io/etcd v0.5.0-alpha.5.0.20191023171146-3cf2f69b5738 (the v3.4.3 tag, the release Jepsen analysed in 2020)", Pkg: "go.etcd.io/etcd", dir: "etcd/3.4.3"},
	{Name: "debian", Server: "3.4.23", Source: "Debian bookworm's etcd-server package", dir: "etcd/debian"},
}

// consulVersions lists the Consul servers the consul target can run; the
// first is the default. All are of the MPL-2.0 lines (1.14 and older), each a
// module that requires github.com/hashicorp/consul and builds its root
// package (see consul/1.14.11/deps.go.txt).
var consulVersions = []ServerVersion{
	{Name: "1.14.11", Server: "1.14.11", Source: "github.com/hashicorp/consul v1.14.11, the last MPL-2.0 line", Pkg: "github.com/hashicorp/consul", dir: "consul/1.14.11"},
	{Name: "1.13.9", Server: "1.13.9", Source: "github.com/hashicorp/consul v1.13.9, the last 1.13 release (MPL-2.0)", Pkg: "github.com/hashicorp/consul", dir: "consul/1.13.9"},
}

// Versions lists the versions of an image kind, the default first; nil for
// kinds with one version (base, zookeeper, worker).
func Versions(kind string) []ServerVersion {
	switch kind {
	case Etcd:
		return etcdVersions
	case Consul:
		return consulVersions
	}
	return nil
}

// VersionNames is Versions' names, comma-separated.
func VersionNames(kind string) string {
	var ns []string
	for _, v := range Versions(kind) {
		ns = append(ns, v.Name)
	}
	return strings.Join(ns, ", ")
}

// LookupVersion returns the version of kind named name ("" is the default).
func LookupVersion(kind, name string) (ServerVersion, bool) {
	vs := Versions(kind)
	if len(vs) == 0 {
		return ServerVersion{}, false
	}
	if name == "" {
		return vs[0], true
	}
	for _, v := range vs {
		if v.Name == name {
			return v, true
		}
	}
	return ServerVersion{}, false
}

// VersionKind is the image kind of a version: the kind itself for its
// default version ("etcd"), KIND@NAME for the others ("etcd@3.5.35").
// Builder.Ensure and a target's Image take it.
func VersionKind(kind, name string) string {
	if vs := Versions(kind); len(vs) > 0 && (name == "" || name == vs[0].Name) {
		return kind
	}
	return kind + "@" + name
}

// SplitKind splits KIND@NAME (no @: the kind's default version, "").
func SplitKind(s string) (kind, name string) {
	kind, name, _ = strings.Cut(s, "@")
	return kind, name
}

// CheckKind returns nil if Builder.Ensure can build kind: one of Kinds, or
// KIND@NAME of a kind's version table.
func CheckKind(s string) error {
	kind, name := SplitKind(s)
	known := false
	for _, k := range Kinds {
		known = known || k == kind
	}
	if !known {
		return fmt.Errorf("images: unknown image %q (valid: %s)", s, strings.Join(Kinds, ", "))
	}
	if name == "" && !strings.Contains(s, "@") {
		return nil
	}
	if _, ok := LookupVersion(kind, name); !ok || name == "" {
		return fmt.Errorf("images: %s has no version %q (available: %s)", kind, name, VersionNames(kind))
	}
	return nil
}

// files are the recipe's embedded files in the order their contents are
// hashed: go.mod.txt and go.sum.txt first, then the others by name (the
// order the images' tags have always hashed them in).
func (v ServerVersion) files() []string {
	ents, err := fs.ReadDir(recipes, v.dir)
	if err != nil {
		panic(err) // embedded at build time: cannot be missing
	}
	var first, rest []string
	for _, e := range ents { // ReadDir sorts by name
		p := path.Join(v.dir, e.Name())
		if e.Name() == "go.mod.txt" || e.Name() == "go.sum.txt" {
			first = append(first, p)
		} else {
			rest = append(rest, p)
		}
	}
	return append(first, rest...)
}

// dockerfile reports whether the recipe is a Dockerfile (else a Go module).
func (v ServerVersion) dockerfile() bool { return v.Pkg == "" }

// ref is the tag of the version's image: fencecheck/KIND:NAME-HASH, the
// hash of the base's tag and the recipe's files.
func (v ServerVersion) ref(kind string) string {
	parts := [][]byte{[]byte(BaseRef())}
	for _, f := range v.files() {
		parts = append(parts, mustRead(f))
	}
	return fmt.Sprintf("fencecheck/%s:%s-%s", kind, v.Name, hashOf(parts...))
}

// goServer is the version's Go build.
func (v ServerVersion) goServer(kind string) goServer {
	files := map[string]string{}
	for _, f := range v.files() {
		files[f] = strings.TrimSuffix(path.Base(f), ".txt")
	}
	return goServer{kind: kind, version: func() string { return v.Server }, ref: func() string { return v.ref(kind) },
		files: files, pkg: v.Pkg, note: "from " + v.Source + " (a minute or more the first time)"}
}

// VersionRef is the tag of the image of kind at version name ("" the
// default).
func VersionRef(kind, name string) (string, error) {
	v, ok := LookupVersion(kind, name)
	if !ok {
		return "", fmt.Errorf("images: %s has no version %q (available: %s)", kind, name, VersionNames(kind))
	}
	return v.ref(kind), nil
}

// ensureVersion builds the image of kind at version v (and the base) unless
// it exists.
func (b *Builder) ensureVersion(ctx context.Context, kind string, v ServerVersion) (string, error) {
	if !v.dockerfile() {
		return b.ensureServer(ctx, v.goServer(kind))
	}
	base, err := b.EnsureBase(ctx)
	if err != nil {
		return "", err
	}
	ref := v.ref(kind)
	return ref, b.ensure(ctx, ref, func(ctx context.Context, ref string) error {
		b.logf("  docker build of %s %s: %s (a few minutes the first time)", kind, v.Name, v.Source)
		var df []byte
		for _, f := range v.files() {
			if path.Base(f) == "Dockerfile.txt" {
				df = mustRead(f)
			}
		}
		dockerfile := fmt.Sprintf("%s\n%s", df, labels(kind, v.Server))
		return b.buildContext(ctx, ref, dockerfile, nil, map[string]*string{"BASE": &base})
	})
}
