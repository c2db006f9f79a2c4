package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/docker/docker/errdefs"

	"github.com/fencecheck/fencecheck/internal/base/platform/sparse"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// CopyFrom copies the directory dir of node c into dst (runtime.Nodes):
// the Engine's archive of it (as docker cp streams it), extracted by
// extractBounded.
func (r *Runtime) CopyFrom(ctx context.Context, c *runtime.Container, dir, dst string, budget *runtime.Budget) (runtime.Copied, error) {
	rc, _, err := r.cli.CopyFromContainer(ctx, c.ID, dir)
	if errdefs.IsNotFound(err) {
		return runtime.Copied{}, nil
	}
	if err != nil {
		return runtime.Copied{}, fmt.Errorf("docker: copy %s out of %s: %w", dir, c.Name, err)
	}
	defer rc.Close()
	got, err := extractBounded(ctx, rc, dst, budget)
	if err != nil {
		return got, fmt.Errorf("docker: copy %s out of %s: %w", dir, c.Name, err)
	}
	return got, nil
}

// holeBlock is the unit of extractBounded's holes (sparse.Block).
const holeBlock = sparse.Block

// extractBounded extracts a tar of one directory (its entries named under
// the directory's base name, as the Engine archives a path) into dst, an
// existing empty directory, under runtime.Nodes.CopyFrom's contract: only
// directories and regular files are made, the files' content stored while
// budget lasts (blocks of zeros left as holes), at most
// runtime.MaxCopyEntries entries. ctx is checked between blocks. On an
// error, a file being written is removed (its bytes given back) and what
// came before stays.
func extractBounded(ctx context.Context, r io.Reader, dst string, budget *runtime.Budget) (runtime.Copied, error) {
	var got runtime.Copied
	tr := tar.NewReader(r)
	type dirMeta struct {
		path string
		hdr  *tar.Header
	}
	var dirs []dirMeta
	buf := make([]byte, 16*holeBlock)
	root := ""
	entries := 0
	for {
		if err := ctx.Err(); err != nil {
			return got, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return got, err
		}
		// The first entry is the directory itself: its base name heads
		// every other entry's.
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		first, rest, _ := strings.Cut(name, "/")
		if root == "" {
			root = first
			if hdr.Typeflag != tar.TypeDir || rest != "" {
				return got, fmt.Errorf("entry %q: not a directory", hdr.Name)
			}
			dirs = append(dirs, dirMeta{dst, hdr})
			continue
		}
		if first != root || rest == "" || !filepath.IsLocal(rest) {
			got.Refuse(hdr.Name, 0, "named outside the directory")
			continue
		}
		if strings.Count(rest, "/") >= runtime.MaxCopyDepth {
			got.Refuse(rest, hdr.Size, fmt.Sprintf("nested more than %d deep", runtime.MaxCopyDepth))
			continue
		}
		p := filepath.Join(dst, filepath.FromSlash(rest))
		switch hdr.Typeflag {
		case tar.TypeDir, tar.TypeReg:
		case tar.TypeSymlink:
			got.Refuse(rest, 0, "symbolic link to "+quoteShort(hdr.Linkname))
			continue
		case tar.TypeLink:
			got.Refuse(rest, 0, "hard link")
			continue
		case tar.TypeChar, tar.TypeBlock:
			got.Refuse(rest, 0, "device")
			continue
		case tar.TypeFifo:
			got.Refuse(rest, 0, "FIFO")
			continue
		default:
			got.Refuse(rest, 0, fmt.Sprintf("entry of kind %q", hdr.Typeflag))
			continue
		}
		if entries >= runtime.MaxCopyEntries {
			if hdr.Typeflag == tar.TypeReg {
				got.LeaveOut(rest, hdr.Size, "entries")
			}
			continue
		}
		entries++
		if hdr.Typeflag == tar.TypeDir {
			// Its parents came before it, or are made here; none is a
			// link, since no link is ever made.
			if err := os.MkdirAll(p, 0o700); err != nil {
				return got, err
			}
			dirs = append(dirs, dirMeta{p, hdr})
			got.Dirs++
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return got, err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			got.Refuse(rest, hdr.Size, "named twice")
			continue
		}
		if err != nil {
			return got, err
		}
		stored, fits, err := sparse.Copy(ctx, f, tr, hdr.Size, budget.Take, buf)
		if err == nil {
			err = f.Chmod(filePerm(hdr.Mode))
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil || !fits {
			os.Remove(p)
			budget.Give(stored)
		}
		if err != nil {
			return got, err
		}
		if !fits {
			got.LeaveOut(rest, hdr.Size, "limit")
			continue
		}
		_ = os.Chtimes(p, hdr.ModTime, hdr.ModTime)
		got.Files++
		got.Size += hdr.Size
		got.Stored += stored
	}
	// Directories' modes and times last: their entries' creation moved
	// their times, and a read-only directory would have refused them.
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Chmod(dirs[i].path, dirPerm(dirs[i].hdr.Mode))
		_ = os.Chtimes(dirs[i].path, dirs[i].hdr.ModTime, dirs[i].hdr.ModTime)
	}
	return got, nil
}

// quoteShort quotes s, cut to 64 bytes: a link's target, from a node,
// named in a report.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// filePerm and dirPerm are a kept file's and directory's modes: the
// archive's, masked to at most 0644 and 0755 (and at least the owner's
// read and write, and search for a directory), with no set-id or sticky
// bit. A node's image may make anything world-writable; its copy on this
// machine is not.
func filePerm(mode int64) os.FileMode { return os.FileMode(mode).Perm()&0o644 | 0o600 }
func dirPerm(mode int64) os.FileMode  { return os.FileMode(mode).Perm()&0o755 | 0o700 }
