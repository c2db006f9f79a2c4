package consul

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/fencecheck/fencecheck/targets"
)

// Get reads a register in one of ReadModes ("" is the default mode).
func (c *client) Get(ctx context.Context, key, mode string) (int64, bool, error) {
	q := &api.QueryOptions{}
	switch mode {
	case "", ModeDefault:
	case ModeConsistent:
		q.RequireConsistent = true
	case ModeStale:
		q.AllowStale = true
	default:
		return 0, false, fmt.Errorf("%w: consul read mode %q (valid: %s)", targets.ErrBadConfig, mode, strings.Join(c.ReadModes(), ", "))
	}
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	pair, _, err := c.api.KV().Get(c.kv+key, q.WithContext(rctx))
	if err != nil {
		return 0, false, fmt.Errorf("consul: get %s: %w", key, err)
	}
	if pair == nil {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(string(pair.Value), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("consul: get %s: value %q: %w", key, pair.Value, err)
	}
	return v, true, nil
}

// Put writes a register.
func (c *client) Put(ctx context.Context, key string, value int64) error {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	if _, err := c.api.KV().Put(&api.KVPair{Key: c.kv + key, Value: []byte(strconv.FormatInt(value, 10))}, write(rctx)); err != nil {
		return fmt.Errorf("consul: put %s: %w", key, err)
	}
	return nil
}

// errUndecided: a compare-and-set whose outcome on the value cannot be told.
var errUndecided = errors.New("compare-and-set undecided")

// CAS sets key to new if it holds old. Consul compares ModifyIndexes, not
// values: CAS reads the key (consistent), and if it holds old, writes new
// with a check-and-set on the index it read. When that check fails the key
// was written in between; a second consistent read that finds a value other
// than old is a moment inside this operation where the comparison fails
// (ok false). If the key still holds old the operation cannot be placed:
// CAS returns an error wrapping errUndecided (the register workload records
// it as info), although the write certainly did not apply. It never
// writes twice.
func (c *client) CAS(ctx context.Context, key string, old, new int64) (bool, error) {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	k := c.kv + key
	holds := func() (bool, uint64, error) {
		pair, _, err := c.api.KV().Get(k, consistent(rctx))
		if err != nil {
			return false, 0, fmt.Errorf("consul: cas %s: read: %w", key, err)
		}
		if pair == nil {
			return false, 0, nil
		}
		v, err := strconv.ParseInt(string(pair.Value), 10, 64)
		if err != nil {
			return false, 0, fmt.Errorf("consul: cas %s: value %q: %w", key, pair.Value, err)
		}
		return v == old, pair.ModifyIndex, nil
	}
	ok, index, err := holds()
	if err != nil || !ok {
		return false, err
	}
	done, _, err := c.api.KV().CAS(&api.KVPair{Key: k, Value: []byte(strconv.FormatInt(new, 10)), ModifyIndex: index}, write(rctx))
	if err != nil {
		return false, fmt.Errorf("consul: cas %s: %w", key, err)
	}
	if done {
		return true, nil
	}
	ok, _, err = holds()
	if err != nil {
		return false, fmt.Errorf("%w: %w", errUndecided, err)
	}
	if !ok {
		return false, nil
	}
	return false, fmt.Errorf("consul: cas %s: %w: the key was rewritten between read and write and holds %d again", key, errUndecided, old)
}
