package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/platform/lazydisk"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
)

// DisksDir is where the lazy disks of runs live on the host: one directory
// per run, and in it one per node, with the node's data (backing) and the
// disk's mount point (mnt).
func DisksDir() string { return filepath.Join(os.TempDir(), "fencecheck-disks") }

// mountDisks mounts a lazy disk for every node of specs that names a data
// directory (dataDirs, by node name), its backing directory first filled
// with what the node's image holds there, and binds it into the node's
// spec. Unmounted by unmountDisks.
func (c *Cluster) mountDisks(ctx context.Context, specs []runtime.ContainerSpec, dataDirs map[string]string) error {
	c.disks = map[string]*lazydisk.Disk{}
	for i := range specs {
		s := &specs[i]
		dir := dataDirs[s.Name]
		if dir == "" {
			continue
		}
		base := filepath.Join(DisksDir(), c.RunID.String(), s.Name)
		backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
		for _, d := range []string{backing, mnt} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return fmt.Errorf("%w: lazy disk of %s: %w", ErrHarness, s.Name, err)
			}
		}
		if err := c.rt.CopyOut(ctx, s.Image, s.Cmd, dir, backing); err != nil {
			return fmt.Errorf("%w: lazy disk of %s: %w", ErrHarness, s.Name, err)
		}
		d, err := lazydisk.Mount(backing, mnt)
		if err != nil {
			return fmt.Errorf("%w: lazy disk of %s: %w", ErrHarness, s.Name, err)
		}
		c.disks[s.Name] = d
		s.Binds = append(s.Binds, runtime.Bind{Host: mnt, Container: dir})
	}
	c.stage("lazy disks under the data directories of %d nodes", len(c.disks))
	return nil
}

// unmountDisks unmounts the run's lazy disks and removes their
// directories; the containers that used them are gone.
func (c *Cluster) unmountDisks() error {
	if c.disks == nil {
		return nil
	}
	var errs []error
	for n, d := range c.disks {
		errs = append(errs, d.Unmount())
		delete(c.disks, n)
	}
	if err := errors.Join(errs...); err != nil {
		return err // the directories stay: fencecheck clean unmounts and removes them
	}
	return os.RemoveAll(filepath.Join(DisksDir(), c.RunID.String()))
}

// CleanDisks unmounts the lazy disks of a run (every run's when runID is
// the zero RunID) left in the mount table by a harness that died, and
// removes their directories; it returns how many it unmounted. Call it
// only when none of those runs is under way. A RunID is parsed where it
// enters (runtime.ParseRunID): it is one hexadecimal name, never a path.
func CleanDisks(runID runtime.RunID) (int, error) {
	dir := DisksDir()
	if runID != "" {
		dir = filepath.Join(dir, runID.String())
	}
	ms, err := lazydisk.Stale()
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, m := range ms {
		if strings.HasPrefix(m, dir+string(filepath.Separator)) {
			errs = append(errs, lazydisk.UnmountStale(m))
			n++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return n, err
	}
	return n, os.RemoveAll(dir)
}

func (e nemesisEnv) disk(node string) (*lazydisk.Disk, error) {
	d := e.c.disks[node]
	if d == nil {
		return nil, fmt.Errorf("harness: node %s has no lazy disk (its data directory is not on one)", node)
	}
	return d, nil
}

// SlowSync delays every fsync on a node's lazy disk (nemesis.Env).
func (e nemesisEnv) SlowSync(_ context.Context, node string, delay time.Duration) error {
	d, err := e.disk(node)
	if err != nil {
		return err
	}
	d.SetSyncDelay(delay)
	return nil
}

// LoseUnsynced drops what a node's lazy disk holds unsynced (nemesis.Env).
// A disk its process never wrote through is an error: the node's data is
// not where the target said (or the Engine does not see the mount).
func (e nemesisEnv) LoseUnsynced(_ context.Context, node string) (nemesis.DiskLoss, error) {
	d, err := e.disk(node)
	if err != nil {
		return nemesis.DiskLoss{}, err
	}
	if d.Stats().Ops == 0 {
		return nemesis.DiskLoss{}, fmt.Errorf("harness: %s has not written to its lazy disk: its data is not in the directory the target names", node)
	}
	l, err := d.LoseUnsynced()
	return nemesis.DiskLoss{Files: l.Files, Bytes: l.Bytes}, err
}

// DiskStats is what a node's lazy disk has seen (nemesis.Env).
func (e nemesisEnv) DiskStats(_ context.Context, node string) (nemesis.DiskStats, error) {
	d, err := e.disk(node)
	if err != nil {
		return nemesis.DiskStats{}, err
	}
	st := d.Stats()
	return nemesis.DiskStats{Ops: st.Ops, Syncs: st.Syncs, Slowed: st.Slowed}, nil
}
