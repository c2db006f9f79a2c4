package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/errdefs"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// CopyOut copies the directory dir of an image into dst (an existing
// directory on the host), with its owners, modes and times: what a
// container of the image finds there before it starts. A directory the image
// lacks copies nothing. It creates a container of the image (cmd is its
// command, never run) labelled as the run's, and removes it.
func (r *Runtime) CopyOut(ctx context.Context, image string, cmd []string, dir, dst string) error {
	cfg := &container.Config{Image: image, Cmd: cmd, Entrypoint: []string{""},
		Labels: map[string]string{runtime.LabelManaged: "1", runtime.LabelRun: r.runID.String(), runtime.LabelRole: "copy"}}
	created, err := r.cli.ContainerCreate(ctx, cfg, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		return fmt.Errorf("docker: create a container of %s to copy %s: %w", image, dir, err)
	}
	defer r.cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	rc, _, err := r.cli.CopyFromContainer(ctx, created.ID, dir)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("docker: copy %s out of %s: %w", dir, image, err)
	}
	defer rc.Close()
	if err := untar(rc, dst); err != nil {
		return fmt.Errorf("docker: copy %s out of %s: %w", dir, image, err)
	}
	return nil
}

// untar extracts a tar of one directory (its entries named under the
// directory's base name) into dst, the directory's own entry onto dst
// itself. Entries that would land outside dst, and kinds other than
// directories, files and symbolic links, are refused.
func untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	type dirTime struct {
		path string
		hdr  *tar.Header
	}
	var dirs []dirTime
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(hdr.Name)
		_, rest, _ := strings.Cut(name, string(filepath.Separator))
		if filepath.IsAbs(rest) || rest == ".." || strings.HasPrefix(rest, ".."+string(filepath.Separator)) {
			return fmt.Errorf("entry %q: outside the directory", hdr.Name)
		}
		p := filepath.Join(dst, rest)
		mode := os.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o700); err != nil {
				return err
			}
			dirs = append(dirs, dirTime{p, hdr})
		case tar.TypeReg:
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(hdr.Linkname, p); err != nil {
				return err
			}
			if err := os.Lchown(p, hdr.Uid, hdr.Gid); err != nil {
				return err
			}
			continue
		default:
			return fmt.Errorf("entry %q: kind %q not copied", hdr.Name, hdr.Typeflag)
		}
		if err := os.Lchown(p, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if err := os.Chtimes(p, hdr.AccessTime, hdr.ModTime); err != nil {
				return err
			}
		}
	}
	// Directories' times last: their entries' creation moved them.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i].path, dirs[i].hdr.AccessTime, dirs[i].hdr.ModTime); err != nil {
			return err
		}
	}
	return nil
}
