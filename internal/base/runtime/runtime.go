// Package runtime is what fencecheck needs from a container platform, as
// Go interfaces: an Engine builds and keeps images (Images), makes the
// nodes of one run (NewRun: a Run) and removes what runs left (Clean). Its
// implementation is package docker (internal/base/platform/docker), on the
// Docker Engine; no other package talks to a platform.
//
// The contracts every implementation keeps:
//
//   - A node is a container with a name unique in its run, an image, a
//     command, environment, files and host directories (ContainerSpec), on the run's
//     private network at a fixed address: servers from .10 of the run's
//     subnet, resources from .60, workers from .100, in the order started. A
//     node killed and restarted keeps its file system and its address.
//   - A node's command runs as its PID 1, so that signalling the node
//     signals the server or worker itself.
//   - Network faults act from the node's network helper (Commands.NetExec),
//     a container of the run's helper image in the node's network
//     namespace, never on the host's firewall, and need nothing inside the
//     node's own image.
//   - Everything an Engine creates for a run (nodes, helpers, networks)
//     carries the labels LabelManaged=1 and LabelRun=<run id>, so that Clean
//     and CleanRun find what a crashed run left behind and touch nothing
//     else on the machine.
//
// Errors callers test with errors.Is are this package's: ErrUnreachable,
// ErrNotStopped, ErrStuckNetwork, ErrImageNotFound; and fs.ErrNotExist from
// Images.ReadFile, for a path the image lacks.
package runtime

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"
)

// Labels on everything an Engine creates for a run.
const (
	LabelManaged = "fencecheck"      // "1" on everything fencecheck creates
	LabelRun     = "fencecheck.run"  // the run id
	LabelRole    = "fencecheck.role" // "server", "worker", "resource", "net", or "copy" (CopyOut's)
	LabelNode    = "fencecheck.node" // the node's name in its run
)

// Roles of nodes.
const (
	RoleServer   = "server"
	RoleWorker   = "worker"
	RoleResource = "resource"
	// RoleNet is a node's network helper (Commands.NetExec): a container of
	// the run's helper image in the node's network namespace.
	RoleNet = "net"
)

// ErrUnreachable: the engine does not answer. Implementations name
// themselves before it ("docker engine unreachable").
var ErrUnreachable = errors.New("engine unreachable")

// ErrNotStopped: a process did not stop within the wait after SIGSTOP.
var ErrNotStopped = errors.New("not stopped after SIGSTOP")

// ErrStuckNetwork: the Engine will not remove a network although no
// container is attached to it, because it still counts an endpoint there. It
// is a bookkeeping fault of the Engine (seen once with Docker 20.10, after
// Ctrl-C during a crash fault, when 4 runs tore down at once): the network
// holds no process and no fault, and only restarting dockerd frees it.
var ErrStuckNetwork = errors.New("the Engine still counts an endpoint on a network no container is attached to (restarting dockerd frees it)")

// ErrImageNotFound: the engine has no image of that reference. Errors that
// wrap it keep the engine's own message.
var ErrImageNotFound = errors.New("no such image")

// ErrNoNetHelper: a network command (Commands.NetExec, WarmHelpers) in a run
// made with no helper image (Engine.NewRun's helperImage empty: the run
// declared no fault that changes a node's network).
var ErrNoNetHelper = errors.New("no network helper: the run was started without the helpers' image (fencecheck's base image), as none of its faults changes a node's network")

// ContainerSpec is a node to start.
type ContainerSpec struct {
	Name  string // node name, unique in the run: n1, w1, ...
	Role  string // RoleServer, RoleWorker or RoleResource
	Image string
	// Entrypoint, when not empty, replaces the image's entry point;
	// []string{""} clears it (as docker run --entrypoint ""), so that Cmd
	// runs as given: a user's image whose entry point is a wrapper script
	// still runs the server itself as PID 1.
	Entrypoint []string
	Cmd        []string
	Env        []string
	// Files are written into the container after it is created and before
	// it starts, their parent directories made as needed: what a server
	// reads at start-up and no image holds (keys, token files), with no
	// shell needed in the image to write them.
	Files []File
	// Binds are host directories mounted into the container.
	Binds []Bind
	// HostNetwork runs the container in the host's network namespace
	// instead of the run's network (no address of its own, no alias), and
	// NetExec refuses it (its helper would change the host's firewall):
	// what stands in for servers outside any run, as a team's staging
	// servers would be, in tests of --endpoints.
	HostNetwork bool
}

// Bind is a host directory mounted at a path of a container.
type Bind struct{ Host, Container string }

// File is a file of ContainerSpec.Files.
type File struct {
	Path string // absolute path in the container
	Data []byte
	Mode int64 // permission bits; 0 is 0o644
}

// Container is a started node.
type Container struct {
	ID   string
	Name string // node name
	Role string
	IP   string // address on the run's network
}

// Cleaned counts what a clean-up removed.
type Cleaned struct {
	Containers, Networks int
	// Stuck names the networks the Engine would not remove though nothing
	// was attached to them (ErrStuckNetwork). They are not an error.
	Stuck []string
}

// Engine is a connection to a container platform: its images, the runs it
// makes, and the clean-up of what runs left.
type Engine interface {
	Images
	// NewRun makes the private network of run runID and returns the run,
	// with no node yet. helperImage is the image of the nodes' network
	// helpers (Commands.NetExec): fencecheck's base image, which has
	// iptables, tc, a shell and sleep; "" for a run that changes no node's
	// network, whose network commands then fail with ErrNoNetHelper.
	NewRun(ctx context.Context, runID RunID, helperImage string) (Run, error)
	// Clean removes every container and network labelled LabelManaged=1,
	// from any run, after sending SIGCONT to each container so that no
	// process stays stopped. It touches nothing without the label, but for
	// disconnecting a container from a labelled network it removes.
	// Networks the engine will not let go of (ErrStuckNetwork) are listed
	// in Cleaned.Stuck, and are not an error.
	Clean(ctx context.Context) (Cleaned, error)
	// CleanRun is Clean for the run runID alone.
	CleanRun(ctx context.Context, runID RunID) (Cleaned, error)
	// Close releases the connection. A Run made from it must not be used
	// afterwards.
	Close() error
}

// Run is the nodes of one run: what one run's harness holds.
type Run interface {
	Nodes
	Processes
	Commands
	Logs
}

// Nodes starts a run's nodes and removes them.
type Nodes interface {
	// StartAll creates and starts the nodes concurrently, each with its
	// name as its host name and network alias, and returns them in the
	// order given; their fixed addresses are given in that order too.
	// Nodes that started are the run's (Containers, Teardown) even when
	// others failed.
	StartAll(ctx context.Context, specs []ContainerSpec) ([]*Container, error)
	// Containers returns the nodes started so far.
	Containers() []*Container
	// CopyOut copies the directory dir of an image into dst (an existing
	// directory on the host), with its owners, modes and times: what a
	// node of the image (cmd its command) finds there before it starts. A
	// directory the image lacks copies nothing.
	CopyOut(ctx context.Context, image string, cmd []string, dir, dst string) error
	// CopyFrom copies the directory dir of node c, running or stopped,
	// into dst, an existing empty directory on the host: its directories
	// and regular files, with their permission bits (set-id bits dropped)
	// and modification times, owned by the caller. What a node holds is
	// untrusted: symbolic and hard links, devices, FIFOs and sockets are
	// refused, never followed nor made, and so is an entry named outside
	// dir. File content is stored as long as budget lasts, runs of zeros
	// left as holes and not counted (etcd preallocates 64 MB WAL
	// segments): a file that would pass it is left out whole, giving back
	// what it took, and the files after it that fit are copied; copies
	// running at once may share one budget. At most MaxCopyEntries files
	// and directories are made, at most MaxCopyDepth deep. Memory stays bounded; the whole
	// directory is read as the platform streams it, so ctx's deadline
	// bounds the time. Copied says what was copied and what was not, also
	// with an error, which leaves what was copied before it. A directory
	// the node lacks copies nothing, without error.
	CopyFrom(ctx context.Context, c *Container, dir, dst string, budget *Budget) (Copied, error)
	// Teardown resumes any stopped process, then removes every container
	// of the run and its network, and says what it removed. It uses its
	// own deadline, so that it still works when the run's context was
	// cancelled (Ctrl-C).
	Teardown() (Cleaned, error)
}

// MaxCopyEntries bounds the files and directories one CopyFrom makes.
const MaxCopyEntries = 65536

// Budget is the bytes CopyFrom may still store, shared by copies that run
// at once. When it runs out while several copy, which of their files are
// left out depends on their timing.
type Budget struct{ left atomic.Int64 }

// NewBudget is a budget of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{}
	b.left.Store(n)
	return b
}

// Take takes n bytes if that many are left, and reports whether it did.
func (b *Budget) Take(n int64) bool {
	for {
		l := b.left.Load()
		if n > l {
			return false
		}
		if b.left.CompareAndSwap(l, l-n) {
			return true
		}
	}
}

// Give gives back n bytes taken.
func (b *Budget) Give(n int64) { b.left.Add(n) }

// MaxCopyDepth bounds how deeply CopyFrom nests directories: what a run
// keeps under data/NODE/ stays within what merge copies of a run.
const MaxCopyDepth = 12

// MaxListed bounds each list of Copied: the entries past it are counted,
// not named.
const MaxListed = 20

// Copied is what Nodes.CopyFrom copied of a node's directory (with the
// JSON names a run's results.json records it under).
type Copied struct {
	Files int `json:"files"`
	Dirs  int `json:"dirs"`
	// Size is the copied files' length in all; Stored what of it was
	// written, the runs of zeros left as holes: what counts against the
	// limit.
	Size   int64 `json:"size"`
	Stored int64 `json:"stored"`
	// LeftOut are the regular files not copied: their content would
	// have passed the limit, or more than MaxCopyEntries were offered.
	// LeftOutCount and LeftOutSize count them all.
	LeftOut      []Skipped `json:"left_out,omitempty"`
	LeftOutCount int       `json:"left_out_count,omitempty"`
	LeftOutSize  int64     `json:"left_out_size,omitempty"`
	// Refused are the entries of other kinds (links, devices, FIFOs,
	// sockets) and those named outside the directory, twice, or deeper
	// than MaxCopyDepth.
	Refused      []Skipped `json:"refused,omitempty"`
	RefusedCount int       `json:"refused_count,omitempty"`
}

// Skipped is an entry CopyFrom did not copy.
type Skipped struct {
	Path string `json:"path"`           // relative to the directory copied
	Size int64  `json:"size,omitempty"` // its length, for a regular file
	Why  string `json:"why"`            // "limit", "entries", "symbolic link", ...
}

// LeaveOut records a regular file not copied, and why.
func (c *Copied) LeaveOut(path string, size int64, why string) {
	c.LeftOutCount++
	c.LeftOutSize += size
	if len(c.LeftOut) < MaxListed {
		c.LeftOut = append(c.LeftOut, Skipped{Path: shortPath(path), Size: size, Why: why})
	}
}

// Refuse records an entry refused, and why.
func (c *Copied) Refuse(path string, size int64, why string) {
	c.RefusedCount++
	if len(c.Refused) < MaxListed {
		c.Refused = append(c.Refused, Skipped{Path: shortPath(path), Size: size, Why: why})
	}
}

// shortPath is p cut to 256 bytes: a name from a node is untrusted.
func shortPath(p string) string {
	if len(p) > 256 {
		return p[:256] + "..."
	}
	return p
}

// Processes signals, kills, restarts and meters the processes of nodes.
type Processes interface {
	// Signal sends a signal ("SIGSTOP", "SIGCONT", "SIGKILL", ...) to the
	// node's PID 1; SIGSTOP and SIGCONT go to every process of the node. A
	// SIGSTOP returns only once every thread of every process of the node
	// is stopped, or else ErrNotStopped after a bounded wait: a stop takes
	// effect only when each thread next passes through the kernel, and a
	// caller may let a frozen client's peer go on right after the call.
	Signal(ctx context.Context, c *Container, sig string) error
	// Kill sends SIGKILL to the node's process and waits until the node
	// has stopped; its file system (a server's data) stays.
	Kill(ctx context.Context, c *Container) error
	// Restart starts a stopped node again, on its own file system and at
	// its fixed address, and gives it a network helper in its new network
	// namespace if it had one.
	Restart(ctx context.Context, c *Container) error
	// Pid returns the host pid of the node's PID 1 (0 when it does not
	// run).
	Pid(ctx context.Context, c *Container) (int, error)
	// ProcessState returns the state letter of the node's PID 1 as the
	// host's /proc shows it (R, S, T, Z, ...), or "" when it does not run.
	ProcessState(ctx context.Context, c *Container) (string, error)
	// LimitCPU caps the node's CPU time at cpus cores (0.02: 2 % of one
	// core); 0 lifts the cap. The node keeps running.
	LimitCPU(ctx context.Context, c *Container, cpus float64) error
	// CPUTime is the CPU time every process of the node has used so far.
	CPUTime(ctx context.Context, c *Container) (time.Duration, error)
}

// Commands runs commands in nodes and in their network namespaces.
type Commands interface {
	// Exec runs a command in the node and returns its combined output; a
	// non-zero exit is an error that includes the output.
	Exec(ctx context.Context, c *Container, cmd ...string) (string, error)
	// NetExec is Exec in the node's network helper: a container of the
	// run's helper image in the node's network namespace, with the right
	// to change its network (iptables, tc), so that a fault needs nothing
	// inside the node's image. The helper starts on first use and is
	// replaced when the node restarted since (a fresh namespace, without
	// the old one's rules). c must be running.
	NetExec(ctx context.Context, c *Container, cmd ...string) (string, error)
	// WarmHelpers starts the network helpers of cs at once, so that a
	// network fault's first rules do not wait for helpers to start.
	WarmHelpers(ctx context.Context, cs []*Container) error
}

// Logs reads what nodes wrote to their stdout and stderr.
type Logs interface {
	// SaveLogs writes the node's output (stdout and stderr, interleaved as
	// the engine kept them, each line prefixed by its time) to path,
	// making its directory.
	SaveLogs(ctx context.Context, c *Container, path string) error
	// LogLines returns the node's log lines written since the given time,
	// each prefixed by the time the engine received it (RFC 3339 with
	// nanoseconds, then a space).
	LogLines(ctx context.Context, c *Container, since time.Time) ([]string, error)
}

// Images builds and keeps images on an engine, with no registry.
type Images interface {
	// Build builds an image from a build context (a tar with a Dockerfile
	// at its root) with the build arguments args, and tags it tag. An error
	// the build reports comes with the build's last output (a failed RUN's
	// output: a compiler's errors).
	Build(ctx context.Context, buildContext io.Reader, tag string, args map[string]string) error
	// Import makes an image tagged tag of a root file system (a tar),
	// applying changes (Dockerfile instructions: ENV, LABEL) and recording
	// comment as its history.
	Import(ctx context.Context, rootfs io.Reader, tag string, changes []string, comment string) error
	// Inspect describes an image; an error wrapping ErrImageNotFound when
	// the engine has none of that reference.
	Inspect(ctx context.Context, ref string) (ImageInfo, error)
	// List returns the images that carry label (KEY, or KEY=VALUE).
	List(ctx context.Context, label string) ([]ImageSummary, error)
	// Remove removes the image ref and its untagged parents. An image a
	// container uses is not removed: that is an error.
	Remove(ctx context.Context, ref string) error
	// Save writes an archive of the image ref (as `docker save`) to w.
	Save(ctx context.Context, ref string, w io.Writer) error
	// Load loads the images of an archive Save wrote, and returns what the
	// Engine says it loaded: each tag (repository:tag), and the ID of each
	// image it loaded without one. On an error, what it had loaded by then.
	Load(ctx context.Context, archive io.Reader) ([]string, error)
	// ReadFile returns the content of the regular file at path in image,
	// without running the image; an error wrapping fs.ErrNotExist when the
	// image holds no such file.
	ReadFile(ctx context.Context, image, path string) ([]byte, error)
}

// ImageInfo is what Inspect tells of an image.
type ImageInfo struct {
	ID string
	// Entrypoint and Cmd are the image's configured entry point and
	// command.
	Entrypoint, Cmd []string
}

// ImageSummary is an image as List lists it.
type ImageSummary struct {
	ID      string
	Tags    []string // repository:tag references
	Labels  map[string]string
	Size    int64
	Created time.Time
}
