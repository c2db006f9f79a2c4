// Package lazydisk is a file system that forgets what was not fsynced: a
// FUSE loopback over a directory of the host (its backing directory) that
// the harness mounts under a node's data directory, so that a fault can make
// fsync slow (SetSyncDelay) or take a power loss (LoseUnsynced).
//
// The model is LazyFS's, page-granular:
//   - A write, a truncation or an fallocate that changes content goes to the
//     backing file at once (reads, sizes and mmap see it, as they see a page
//     cache), and the first time since the file's last fsync that it changes
//     a 4 KiB page that the file had at that fsync, the page's old bytes are
//     kept in memory.
//   - fsync or fdatasync of the file (any handle of it, or a write through a
//     handle opened O_SYNC or O_DSYNC) makes its content durable: the kept
//     pages are dropped, and the file's durable size is its size now.
//   - LoseUnsynced, called while no process uses the disk (its node killed),
//     puts every kept page back and truncates every file to its durable
//     size: what a machine that lost power shows when it boots. A file
//     created since its last fsync comes back empty.
//
// Names are durable at once: creating, renaming and removing files and
// directories go to the backing directory and stay (as on a journalling file
// system that commits metadata before data); only file contents are lost.
package lazydisk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// FsName is the file system name of every lazy disk in the mount table:
// what Stale looks for.
const FsName = "fencecheck-lazydisk"

// pageSize is the unit of what is kept to put back.
const pageSize = 4096

// Supported returns nil when this process can mount a lazy disk (it runs as
// root, and /dev/fuse opens), else why not.
func Supported() error {
	if os.Geteuid() != 0 {
		return errors.New("mounting a lazy disk (FUSE) needs root; fencecheck runs as uid " + fmt.Sprint(os.Geteuid()))
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("a lazy disk needs FUSE: %w (load the fuse module, or give the container /dev/fuse)", err)
	}
	f.Close()
	return nil
}

// Disk is a mounted lazy disk.
type Disk struct {
	mountpoint string
	server     *fuse.Server

	delay atomic.Int64 // fsync delay, ns

	mu    sync.Mutex
	files map[uint64]*fileState // by backing inode: files changed since their last fsync

	ops, syncs, slowed atomic.Int64
}

// fileState is what a file had at its last fsync: its size, and the old
// bytes of the pages changed since.
type fileState struct {
	f       *os.File // our own read-write handle of the backing inode
	synced  int64
	pages   map[int64][]byte
	written int64 // bytes written or cut since the last fsync
}

// Stats counts what a disk has seen.
type Stats struct {
	// Ops are the writes, truncations and fsyncs that reached it: none
	// means the node's process does not write through it.
	Ops int64
	// Syncs are the fsyncs; Slowed those that SetSyncDelay held.
	Syncs, Slowed int64
}

// Lost is what LoseUnsynced dropped.
type Lost struct {
	Files int   // files that lost content
	Bytes int64 // bytes written (or cut) since those files' last fsync
}

// Mount mounts a lazy disk over backing (a directory) at mountpoint (an
// existing empty directory), readable and writable by every user (the
// container's processes run as their own users), with the kernel checking
// permissions as on any disk.
func Mount(backing, mountpoint string) (*Disk, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("lazydisk: backing directory: %w", err)
	}
	d := &Disk{mountpoint: mountpoint, files: map[uint64]*fileState{}}
	root := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, d: d}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)
	zero := time.Duration(0)
	srv, err := fs.Mount(mountpoint, root.RootNode, &fs.Options{
		// No caching of names or attributes: after a power loss the
		// kernel must see the sizes the files came back with.
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			AllowOther: true, FsName: FsName, Name: "lazydisk",
			DirectMount: true,
			Options:     []string{"default_permissions"},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("lazydisk: mount %s: %w", mountpoint, err)
	}
	d.server = srv
	return d, nil
}

// Mountpoint is where the disk is mounted.
func (d *Disk) Mountpoint() string { return d.mountpoint }

// SetSyncDelay makes every fsync take delay longer than it does (0: as it
// does), from the next fsync on.
func (d *Disk) SetSyncDelay(delay time.Duration) { d.delay.Store(int64(delay)) }

// Stats is what the disk has seen so far.
func (d *Disk) Stats() Stats {
	return Stats{Ops: d.ops.Load(), Syncs: d.syncs.Load(), Slowed: d.slowed.Load()}
}

// LoseUnsynced drops every change not made durable by an fsync (see the
// package comment) and returns what it dropped. No process may use the disk
// meanwhile: call it while the node is down.
func (d *Disk) LoseUnsynced() (Lost, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var lost Lost
	var errs []error
	for ino, s := range d.files {
		if s.written > 0 {
			lost.Files++
			lost.Bytes += s.written
		}
		for off, page := range s.pages {
			if _, err := s.f.WriteAt(page, off); err != nil {
				errs = append(errs, err)
			}
		}
		if err := s.f.Truncate(s.synced); err != nil {
			errs = append(errs, err)
		}
		if err := s.f.Sync(); err != nil {
			errs = append(errs, err)
		}
		s.f.Close()
		delete(d.files, ino)
	}
	if err := errors.Join(errs...); err != nil {
		return lost, fmt.Errorf("lazydisk: put back what %s had at its last fsync: %w", d.mountpoint, err)
	}
	return lost, nil
}

// Unmount unmounts the disk (lazily if a process still holds it) and makes
// what it holds durable as it is: the backing directory keeps every write.
func (d *Disk) Unmount() error {
	d.mu.Lock()
	for ino, s := range d.files {
		s.f.Close()
		delete(d.files, ino)
	}
	d.mu.Unlock()
	err := d.server.Unmount()
	if err != nil {
		err = unix.Unmount(d.mountpoint, unix.MNT_DETACH)
	}
	if err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("lazydisk: unmount %s: %w", d.mountpoint, err)
	}
	return nil
}

// Stale lists the mount points of lazy disks in this machine's mount table
// (those of a harness that died: a live one's too, so call it only when no
// run is under way).
func Stale() ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		// ... mountpoint ... - fstype source options
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 2 || g[1] != FsName {
			continue
		}
		out = append(out, unescapeMount(f[4]))
	}
	return out, nil
}

// Unmount unmounts a lazy disk at mountpoint whose harness is gone
// (MNT_DETACH: a process still in it sees it go).
func UnmountStale(mountpoint string) error {
	if err := unix.Unmount(mountpoint, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("lazydisk: unmount %s: %w", mountpoint, err)
	}
	return nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// state returns the file's state since its last fsync, made on its first
// change: f is a handle of the backing inode, ino its number.
func (d *Disk) state(ino uint64, fd int) (*fileState, error) {
	if s := d.files[ino]; s != nil {
		return s, nil
	}
	// Our own read-write handle of the same inode, whatever the caller's
	// flags, that follows the file through renames.
	f, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s := &fileState{f: f, synced: fi.Size(), pages: map[int64][]byte{}}
	d.files[ino] = s
	return s, nil
}

// keep keeps the old bytes of the pages of [off, end) that the file had at
// its last fsync and that no change since has touched. d.mu is held.
func (s *fileState) keep(off, end int64) error {
	if end > s.synced {
		end = s.synced
	}
	for p := off / pageSize * pageSize; p < end; p += pageSize {
		if _, ok := s.pages[p]; ok {
			continue
		}
		n := min(int64(pageSize), s.synced-p)
		buf := make([]byte, n)
		m, err := s.f.ReadAt(buf, p)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		s.pages[p] = buf[:m]
	}
	return nil
}

// change records a change of [off, end) of the file behind fd (n bytes
// written or cut) before it is made; cut also keeps every page from off to
// the durable end (a truncation or a shift).
func (d *Disk) change(fd int, off, end, n int64) syscall.Errno {
	d.ops.Add(1)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.state(st.Ino, fd)
	if err != nil {
		return fs.ToErrno(err)
	}
	if err := s.keep(off, end); err != nil {
		return fs.ToErrno(err)
	}
	s.written += n
	return 0
}

// synced records that the file behind fd is durable as it is now.
func (d *Disk) synced(fd int) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s := d.files[st.Ino]; s != nil {
		s.f.Close()
		delete(d.files, st.Ino)
	}
}

// cutByPath records a truncation of the file at path p to sz before it is
// made.
func (d *Disk) cutByPath(p string, sz int64) syscall.Errno {
	g, err := os.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer g.Close()
	return (&file{fd: int(g.Fd()), d: d}).truncate(sz)
}

// wait holds an fsync for the delay SetSyncDelay set, or until ctx ends.
func (d *Disk) wait(ctx context.Context) {
	d.syncs.Add(1)
	delay := time.Duration(d.delay.Load())
	if delay <= 0 {
		return
	}
	d.slowed.Add(1)
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// node is a loopback node whose files are lazy (file) and whose other
// ways of changing content go through the same bookkeeping.
type node struct {
	fs.LoopbackNode
	d *Disk
}

func (n *node) path() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

// Open returns a lazy handle; O_TRUNC's cut is recorded before it is made.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	trunc := flags&syscall.O_TRUNC != 0
	f, err := os.OpenFile(n.path(), int(flags&^syscall.O_TRUNC), 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	h := &file{lf: fs.NewLoopbackFileFromOS(f), fd: int(f.Fd()), d: n.d, sync: flags&(syscall.O_SYNC|syscall.O_DSYNC) != 0}
	if trunc && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		errno := h.truncate(0)
		if errno == 0 {
			errno = fs.ToErrno(f.Truncate(0))
		}
		if errno != 0 {
			f.Close()
			return nil, 0, errno
		}
	}
	return h, 0, 0
}

// Create makes the file (a name: durable at once) and returns a lazy
// handle; its content is not durable until an fsync.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	p := filepath.Join(n.path(), name)
	_, err := os.Lstat(p)
	existed := err == nil
	if existed && flags&syscall.O_TRUNC != 0 {
		// Raced with another create: the file's durable content is cut.
		if errno := n.d.cutByPath(p, 0); errno != 0 {
			return nil, nil, 0, errno
		}
	}
	ch, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return ch, fh, fl, errno
	}
	lf := fh.(*fs.LoopbackFile)
	fd, ok := lf.PassthroughFd() // the handle's descriptor (not passed to the kernel)
	if !ok {
		return ch, fh, fl, syscall.EBADF
	}
	h := &file{lf: lf, fd: fd, d: n.d, sync: flags&(syscall.O_SYNC|syscall.O_DSYNC) != 0}
	if !existed {
		if errno := h.truncate(-1); errno != 0 {
			return ch, fh, fl, errno
		}
	}
	return ch, h, fl, 0
}

// Setattr records a truncation before it is made.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		var errno syscall.Errno
		if h, ok := f.(*file); ok {
			errno = h.truncate(int64(sz))
		} else {
			errno = n.d.cutByPath(n.path(), int64(sz))
		}
		if errno != 0 {
			return errno
		}
	}
	if h, ok := f.(*file); ok {
		f = h.lf
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// Getattr reads through the loopback handle.
func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if h, ok := f.(*file); ok {
		f = h.lf
	}
	return n.LoopbackNode.Getattr(ctx, f, out)
}

// CopyFileRange is refused, so the kernel copies through reads and writes,
// which the disk keeps account of.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.EOPNOTSUPP
}

// Tmpfile (O_TMPFILE) is refused: an unnamed file's content would escape
// the bookkeeping.
func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// file is a lazy handle: the loopback handle's operations, with changes
// recorded before they are made and fsync marking the file durable. It
// offers no passthrough descriptor, so every read and write reaches it.
type file struct {
	lf   *fs.LoopbackFile
	fd   int
	d    *Disk
	sync bool // opened O_SYNC or O_DSYNC: every write is durable on return
}

var (
	_ fs.FileReader    = (*file)(nil)
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileFsyncer   = (*file)(nil)
	_ fs.FileFlusher   = (*file)(nil)
	_ fs.FileReleaser  = (*file)(nil)
	_ fs.FileGetattrer = (*file)(nil)
	_ fs.FileWritever  = (*file)(nil)
	_ fs.FileAllocater = (*file)(nil)
	_ fs.FileLseeker   = (*file)(nil)
	_ fs.FileGetlker   = (*file)(nil)
	_ fs.FileSetlker   = (*file)(nil)
	_ fs.FileSetlkwer  = (*file)(nil)
)

// truncate records a cut to size sz (-1: the file is new, nothing of it is
// durable) before it is made.
func (h *file) truncate(sz int64) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Fstat(h.fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	if sz < 0 {
		h.d.mu.Lock()
		defer h.d.mu.Unlock()
		s, err := h.d.state(st.Ino, h.fd)
		if err != nil {
			return fs.ToErrno(err)
		}
		s.synced = 0
		clear(s.pages)
		return 0
	}
	if sz >= st.Size {
		return h.d.change(h.fd, st.Size, st.Size, sz-st.Size)
	}
	return h.d.change(h.fd, sz, st.Size, st.Size-sz)
}

func (h *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return h.lf.Read(ctx, buf, off)
}

func (h *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := h.d.change(h.fd, off, off+int64(len(data)), int64(len(data))); errno != 0 {
		return 0, errno
	}
	n, errno := h.lf.Write(ctx, data, off)
	if errno == 0 && h.sync {
		h.d.synced(h.fd)
	}
	return n, errno
}

func (h *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	h.d.ops.Add(1)
	h.d.wait(ctx)
	errno := h.lf.Fsync(ctx, flags)
	if errno == 0 {
		h.d.synced(h.fd)
	}
	return errno
}

// Writev writes data split over several slices as one Write.
func (h *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	var buf []byte
	for _, b := range data {
		buf = append(buf, b...)
	}
	return h.Write(ctx, buf, off)
}

// Allocate records what a hole punch, a zeroed range or a shift changes; a
// plain allocation only grows the file, which the durable size undoes.
func (h *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Fstat(h.fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	end := int64(off + size)
	switch {
	case mode&(unix.FALLOC_FL_COLLAPSE_RANGE|unix.FALLOC_FL_INSERT_RANGE) != 0:
		end = max(st.Size, end) // everything after off moves
	case mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0:
	default:
		end = int64(off) // content unchanged
	}
	if errno := h.d.change(h.fd, int64(off), end, max(0, end-int64(off))); errno != 0 {
		return errno
	}
	return h.lf.Allocate(ctx, off, size, mode)
}

func (h *file) Flush(ctx context.Context) syscall.Errno   { return h.lf.Flush(ctx) }
func (h *file) Release(ctx context.Context) syscall.Errno { return h.lf.Release(ctx) }
func (h *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.lf.Getattr(ctx, out)
}
func (h *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return h.lf.Lseek(ctx, off, whence)
}
func (h *file) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return h.lf.Getlk(ctx, owner, lk, flags, out)
}
func (h *file) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.lf.Setlk(ctx, owner, lk, flags)
}
func (h *file) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return h.lf.Setlkw(ctx, owner, lk, flags)
}
