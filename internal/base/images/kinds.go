package images

import "github.com/fencecheck/fencecheck/internal/base/images/kinds"

// The image kinds and version tables live in package kinds, which links no
// Docker SDK (targets and resources name their images through it); these
// are its names for this package's callers.

// Image kinds.
const (
	Base       = kinds.Base
	Etcd       = kinds.Etcd
	Consul     = kinds.Consul
	ZooKeeper  = kinds.ZooKeeper
	Kubernetes = kinds.Kubernetes
	Worker     = kinds.Worker
)

// Kinds lists the image kinds in build order (the base first).
var Kinds = kinds.Kinds

// DefaultKinds are the kinds EnsureAll builds when given none
// (kinds.DefaultKinds: all but kubernetes).
var DefaultKinds = kinds.DefaultKinds

// ServerVersion is one version of a server image (kinds.ServerVersion).
type ServerVersion = kinds.ServerVersion

// Versions lists the versions of an image kind, the default first
// (kinds.Versions).
func Versions(kind string) []ServerVersion { return kinds.Versions(kind) }

// VersionNames is Versions' names, comma-separated.
func VersionNames(kind string) string { return kinds.VersionNames(kind) }

// LookupVersion returns the version of kind named name ("" is the default).
func LookupVersion(kind, name string) (ServerVersion, bool) { return kinds.LookupVersion(kind, name) }

// VersionKind is the image kind of a version (kinds.VersionKind).
func VersionKind(kind, name string) string { return kinds.VersionKind(kind, name) }

// SplitKind splits KIND@NAME (kinds.SplitKind).
func SplitKind(s string) (kind, name string) { return kinds.SplitKind(s) }

// CheckKind returns nil if Builder.Ensure can build kind (kinds.CheckKind).
func CheckKind(s string) error { return kinds.CheckKind(s) }

// EtcdVersion is the etcd server version of the default etcd image.
func EtcdVersion() string { return kinds.EtcdVersion() }

// ConsulVersion is the Consul server version of the default consul image.
func ConsulVersion() string { return kinds.ConsulVersion() }

// ZooKeeperVersion is the ZooKeeper server version the zookeeper image runs.
func ZooKeeperVersion() string { return kinds.ZooKeeperVersion() }

// KubernetesVersion is the Kubernetes version of the default kubernetes
// image.
func KubernetesVersion() string { return kinds.KubernetesVersion() }
