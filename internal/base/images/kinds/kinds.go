// Package kinds names fencecheck's container images and the server
// versions each can run: what a target or a resource needs to say which
// image its containers run, without the Docker SDK that package images
// builds them with (so that the worker binary, which links the targets
// and resources, links no Docker SDK).
package kinds

import (
	"fmt"
	"strings"
)

// Image kinds.
const (
	Base       = "base"
	Etcd       = "etcd"
	Consul     = "consul"
	ZooKeeper  = "zookeeper"
	Kubernetes = "kubernetes"
	Worker     = "worker"
)

// Kinds lists the image kinds in build order (the base first).
var Kinds = []string{Base, Etcd, Consul, ZooKeeper, Kubernetes, Worker}

// DefaultKinds are the kinds `images build` builds when it names none (what
// `make images` builds): every kind but kubernetes, whose kube-apiserver
// takes 13 minutes of CPU time to compile (7 to 13 minutes on 2 cores) and
// which no target runs yet; it is built when named, or on first use.
var DefaultKinds = []string{Base, Etcd, Consul, ZooKeeper, Worker}

// EtcdVersion is the etcd server version of the default etcd image.
func EtcdVersion() string { return etcdVersions[0].Server }

// ConsulVersion is the Consul server version of the default consul image.
func ConsulVersion() string { return consulVersions[0].Server }

// KubernetesVersion is the Kubernetes version of the default kubernetes
// image's kube-apiserver.
func KubernetesVersion() string { return kubernetesVersions[0].Server }

// ZooKeeperVersion is the ZooKeeper server version the zookeeper image
// runs: that of Debian bookworm's zookeeper package (3.8.0-11+deb12u2 when
// the recipe was written; the recipe does not pin the Debian revision, and
// the target's integration test checks the version the servers report).
func ZooKeeperVersion() string { return "3.8.0" }

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
	// Ldflags are -ldflags that go build adds to "-s -w" (the -X flags that
	// stamp a version into a binary whose release builds get it from
	// their build scripts); part of the image's tag when not empty.
	Ldflags string
	// Binary is the server's file name in /usr/local/bin; "" is the
	// kind's name.
	Binary string
	// Takes says how long its first compile takes, for the build log; ""
	// is "a minute or more".
	Takes string

	// Dir is the recipe's folder under internal/base/images (package images
	// reads its files).
	Dir string
}

// etcdVersions lists the etcd servers the etcd target can run; the first is
// the default. Each is built on first use (a run, or `images build`), in
// about a minute (a Go module) or a few (Debian's package).
var etcdVersions = []ServerVersion{
	{Name: "3.6.16", Server: "3.6.16", Source: "go.etcd.io/etcd/server/v3 v3.6.16", Pkg: ".", Dir: "etcd/3.6.16"},
	{Name: "3.7.3", Server: "3.7.3", Source: "go.etcd.io/etcd/server/v3 v3.7.3 (the newest 3.7.x on the module proxy)", Pkg: ".", Dir: "etcd/3.7.3"},
	{Name: "3.5.35", Server: "3.5.35", Source: "go.etcd.io/etcd/server/v3 v3.5.35 (the newest 3.5.x on the module proxy)", Pkg: ".", Dir: "etcd/3.5.35"},
	{Name: "3.4.3", Server: "3.4.3", Source: "go.etcd.io/etcd v0.5.0-alpha.5.0.20191023171146-3cf2f69b5738 (the v3.4.3 tag, the release Jepsen analysed in 2020)", Pkg: "go.etcd.io/etcd", Dir: "etcd/3.4.3"},
	{Name: "debian", Server: "3.4.23", Source: "Debian bookworm's etcd-server package", Dir: "etcd/debian"},
}

// consulVersions lists the Consul servers the consul target can run; the
// first is the default. All are of the MPL-2.0 lines (1.14 and older), each a
// module that requires github.com/hashicorp/consul and builds its root
// package (see consul/1.14.11/deps.go.txt).
var consulVersions = []ServerVersion{
	{Name: "1.14.11", Server: "1.14.11", Source: "github.com/hashicorp/consul v1.14.11, the last MPL-2.0 line", Pkg: "github.com/hashicorp/consul", Dir: "consul/1.14.11"},
	{Name: "1.13.9", Server: "1.13.9", Source: "github.com/hashicorp/consul v1.13.9, the last 1.13 release (MPL-2.0)", Pkg: "github.com/hashicorp/consul", Dir: "consul/1.13.9"},
}

// kubernetesVersions lists the Kubernetes releases the kubernetes image can
// run: kube-apiserver alone (cmd/kube-apiserver of k8s.io/kubernetes, built
// with CGO_ENABLED=0 as the release builds are), the control plane that
// client-go's Leases and leader election talk to, with etcd as its store.
// k8s.io/kubernetes requires its ~31 staging modules (k8s.io/api,
// apimachinery, apiserver, client-go, ...) at v0.0.0 and replaces them with
// directories of its own repository, which its module zip lacks; the
// recipe's go.mod replaces each with its v0.MINOR.PATCH release, the same
// source published as its own module (see kubernetes/1.37.2/deps.go.txt).
var kubernetesVersions = []ServerVersion{
	{Name: "1.37.2", Server: "1.37.2", Source: "k8s.io/kubernetes v1.37.2 (cmd/kube-apiserver; its staging modules at v0.37.2)",
		Pkg: "k8s.io/kubernetes/cmd/kube-apiserver", Dir: "kubernetes/1.37.2", Binary: "kube-apiserver",
		Takes:   "7 minutes or more on 2 idle cores, 13 on a busy machine",
		Ldflags: "-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"},
}

// Versions lists the versions of an image kind, the default first; nil for
// kinds with no version table (base, zookeeper, worker).
func Versions(kind string) []ServerVersion {
	switch kind {
	case Etcd:
		return etcdVersions
	case Consul:
		return consulVersions
	case Kubernetes:
		return kubernetesVersions
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
