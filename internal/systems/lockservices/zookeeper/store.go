package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/go-zookeeper/zk"

	"github.com/fencecheck/fencecheck/targets"
)

// Reset empties the list, sets the fence to 0 and removes whatever is left
// in the lock's and the election's queues.
func (c *client) Reset(ctx context.Context) error {
	for _, dir := range []string{c.lockDir, c.electionDir} {
		if err := c.ensure(ctx, dir); err != nil {
			return fmt.Errorf("zookeeper: reset: %w", err)
		}
		kids, err := op(ctx, c, func(z *zk.Conn) ([]string, error) {
			kids, _, err := z.Children(dir)
			return kids, err
		})
		if err != nil {
			return fmt.Errorf("zookeeper: reset: %w", err)
		}
		for _, k := range kids {
			if _, err := op(ctx, c, func(z *zk.Conn) (struct{}, error) { return struct{}{}, z.Delete(dir+"/"+k, -1) }); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return fmt.Errorf("zookeeper: reset: delete %s: %w", k, err)
			}
		}
	}
	for path, v := range map[string]string{c.value: "[]", c.fence: "0"} {
		if err := c.put(ctx, path, []byte(v)); err != nil {
			return fmt.Errorf("zookeeper: reset: %w", err)
		}
	}
	return nil
}

// put sets a znode's data, creating it where it is missing. Each attempt
// that fails does so certainly (no node; the node exists), so at most one
// of them writes.
func (c *client) put(ctx context.Context, path string, data []byte) error {
	_, err := op(ctx, c, func(z *zk.Conn) (*zk.Stat, error) { return z.Set(path, data, -1) })
	if !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	_, err = op(ctx, c, func(z *zk.Conn) (string, error) { return z.Create(path, data, 0, zk.WorldACL(zk.PermAll)) })
	if !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	_, err = op(ctx, c, func(z *zk.Conn) (*zk.Stat, error) { return z.Set(path, data, -1) })
	return err
}

type data struct {
	b    []byte
	stat *zk.Stat
}

// get reads a znode, after a sync when synced is set: the server the
// client talks to then has applied every transaction the leader committed
// before the sync, so the read sees every write acknowledged before it.
func (c *client) get(ctx context.Context, path string, synced bool) (data, error) {
	if synced {
		if _, err := op(ctx, c, func(z *zk.Conn) (string, error) { return z.Sync(path) }); err != nil {
			return data{}, fmt.Errorf("sync: %w", err)
		}
	}
	return op(ctx, c, func(z *zk.Conn) (data, error) {
		b, st, err := z.Get(path)
		return data{b, st}, err
	})
}

// Read returns the list (sync, then read).
func (c *client) Read(ctx context.Context) ([]int64, error) {
	d, err := c.get(ctx, c.value, true)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: read: %w", err)
	}
	return decodeList(d.b)
}

func decodeList(b []byte) ([]int64, error) {
	list := []int64{}
	if len(b) == 0 {
		return list, nil
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("zookeeper: read: value %q: %w", b, err)
	}
	return list, nil
}

// ourLease is held as this target's lease, or an error naming what needs it.
func ourLease(held targets.Lease, what string) (*lease, error) {
	l, ok := held.(*lease)
	if !ok {
		return nil, fmt.Errorf("zookeeper: %s needs a zookeeper lease", what)
	}
	return l, nil
}

// raise reads the fence (after a sync) and returns the multi operation that
// sets it to the lease's token if nobody wrote it since, or an error
// wrapping ErrFenced if it holds a higher token.
func (c *client) raise(ctx context.Context, token int64) (*zk.SetDataRequest, error) {
	d, err := c.get(ctx, c.fence, true)
	if err != nil {
		return nil, fmt.Errorf("read the fence: %w", err)
	}
	highest, err := strconv.ParseInt(string(d.b), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("the fence holds %q", d.b)
	}
	if highest > token {
		return nil, fmt.Errorf("%w: token %d < highest accepted %d", targets.ErrFenced, token, highest)
	}
	return &zk.SetDataRequest{Path: c.fence, Data: []byte(strconv.FormatInt(token, 10)), Version: d.stat.Version}, nil
}

// multi sends ops as one transaction. A transaction whose first operation
// (the fence's version check or the lock znode's check) failed is refused
// by fencing, with why as the reason; it certainly did not apply.
func (c *client) multi(ctx context.Context, why string, ops ...any) ([]zk.MultiResponse, error) {
	res, err := op(ctx, c, func(z *zk.Conn) ([]zk.MultiResponse, error) { return z.Multi(ops...) })
	if err != nil && len(res) > 0 {
		if first := res[0].Error; errors.Is(first, zk.ErrBadVersion) || errors.Is(first, zk.ErrNoNode) {
			return nil, fmt.Errorf("%w: %s (%v)", targets.ErrFenced, why, first)
		}
	}
	return res, err
}

// ReadFenced raises the fence to the lease's token, unless it holds a
// higher one, then reads the list: after the fence's write on the same
// session, so the read sees every write the fence let through before.
func (c *client) ReadFenced(ctx context.Context, held targets.Lease) ([]int64, error) {
	token := held.Token()
	set, err := c.raise(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: fenced read: %w", err)
	}
	if _, err := c.multi(ctx, fmt.Sprintf("read with token %d: the fence moved since it was read", token), set); err != nil {
		return nil, fmt.Errorf("zookeeper: fenced read: %w", err)
	}
	d, err := c.get(ctx, c.value, false)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: fenced read: %w", err)
	}
	return decodeList(d.b)
}

// Write replaces the list, fenced as f says. Its revision is the value
// znode's modification zxid.
func (c *client) Write(ctx context.Context, list []int64, held targets.Lease, f targets.Fencing) (int64, error) {
	b, err := json.Marshal(list)
	if err != nil {
		return 0, err
	}
	set := &zk.SetDataRequest{Path: c.value, Data: b, Version: -1}
	switch f {
	case targets.FencingNone:
		st, err := op(ctx, c, func(z *zk.Conn) (*zk.Stat, error) { return z.Set(c.value, b, -1) })
		if err != nil {
			return 0, fmt.Errorf("zookeeper: set: %w", err)
		}
		return st.Mzxid, nil
	case targets.FencingToken:
		token := held.Token()
		raise, err := c.raise(ctx, token)
		if err != nil {
			return 0, fmt.Errorf("zookeeper: write: %w", err)
		}
		res, err := c.multi(ctx, fmt.Sprintf("token %d: the fence moved since it was read", token), raise, set)
		if err != nil {
			return 0, fmt.Errorf("zookeeper: write: %w", err)
		}
		return res[1].Stat.Mzxid, nil
	case targets.FencingCAS:
		l, err := ourLease(held, "cas fencing")
		if err != nil {
			return 0, err
		}
		check := &zk.CheckVersionRequest{Path: l.path, Version: l.version}
		res, err := c.multi(ctx, fmt.Sprintf("lock znode %s (czxid %d) is gone", l.path, l.token), check, set)
		if err != nil {
			return 0, fmt.Errorf("zookeeper: write: %w", err)
		}
		return res[1].Stat.Mzxid, nil
	}
	return 0, fmt.Errorf("zookeeper: unknown fencing %q", f)
}

// Read modes of the registers.
const (
	// ReadSync syncs the server with the leader, then reads (the default).
	ReadSync = "sync"
	// ReadLocal reads the server's own state, which may be behind.
	ReadLocal = "local"
)

// ReadModes are sync (the default) and local.
func (Target) ReadModes() []string { return []string{ReadSync, ReadLocal} }

// ReadModes is Target.ReadModes.
func (c *client) ReadModes() []string { return Target{}.ReadModes() }

func (c *client) regKey(key string) string { return c.prefix + "/reg/" + key }

// Get reads a register in a read mode.
func (c *client) Get(ctx context.Context, key, mode string) (int64, bool, error) {
	var synced bool
	switch mode {
	case ReadSync, "":
		synced = true
	case ReadLocal:
	default:
		return 0, false, fmt.Errorf("zookeeper: unknown read mode %q", mode)
	}
	v, _, found, err := c.register(ctx, key, synced)
	return v, found, err
}

// register reads a register: its value, the znode's version, and whether
// it exists.
func (c *client) register(ctx context.Context, key string, synced bool) (int64, int32, bool, error) {
	d, err := c.get(ctx, c.regKey(key), synced)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return 0, 0, false, nil
	case err != nil:
		return 0, 0, false, fmt.Errorf("zookeeper: get: %w", err)
	}
	v, err := strconv.ParseInt(string(d.b), 10, 64)
	if err != nil {
		return 0, 0, false, fmt.Errorf("zookeeper: register %s holds %q", key, d.b)
	}
	return v, d.stat.Version, true, nil
}

// Put writes a register.
func (c *client) Put(ctx context.Context, key string, value int64) error {
	if err := c.ensure(ctx, c.prefix+"/reg"); err != nil {
		return fmt.Errorf("zookeeper: put: %w", err)
	}
	if err := c.put(ctx, c.regKey(key), []byte(strconv.FormatInt(value, 10))); err != nil {
		return fmt.Errorf("zookeeper: put: %w", err)
	}
	return nil
}

// CAS sets a register to new if it holds old: a synced read, then a set
// conditional on the version read. A set refused because the version moved
// is an error, not false: the register may have held old all along (a
// write of the same value in between).
func (c *client) CAS(ctx context.Context, key string, old, new int64) (bool, error) {
	v, version, found, err := c.register(ctx, key, true)
	if err != nil {
		return false, err
	}
	if !found || v != old {
		return false, nil
	}
	_, err = op(ctx, c, func(z *zk.Conn) (*zk.Stat, error) {
		return z.Set(c.regKey(key), []byte(strconv.FormatInt(new, 10)), version)
	})
	if err != nil {
		return false, fmt.Errorf("zookeeper: cas: %w", err)
	}
	return true, nil
}

// Interfaces.
var (
	_ targets.Store   = (*client)(nil)
	_ targets.KV      = (*client)(nil)
	_ targets.Elector = (*client)(nil)
)
