package consul

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/consul/api"

	"github.com/fencecheck/fencecheck/targets"
)

// Reset deletes the lock key, sets the list to [] and the fence to 0, in one
// transaction.
func (c *client) Reset(ctx context.Context) error {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	ok, resp, _, err := c.api.Txn().Txn(api.TxnOps{
		{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: c.lock}},
		{KV: &api.KVTxnOp{Verb: api.KVDelete, Key: c.leader}},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.value, Value: []byte("[]")}},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.fence, Value: []byte("0")}},
	}, query(rctx))
	if err != nil {
		return fmt.Errorf("consul: reset: %w", err)
	}
	if !ok {
		return fmt.Errorf("consul: reset: %s", txnErrors(resp))
	}
	return nil
}

func (c *client) Read(ctx context.Context) ([]int64, error) {
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	pair, _, err := c.api.KV().Get(c.value, consistent(rctx))
	if err != nil {
		return nil, fmt.Errorf("consul: read: %w", err)
	}
	list := []int64{}
	if pair == nil {
		return list, nil
	}
	if err := json.Unmarshal(pair.Value, &list); err != nil {
		return nil, fmt.Errorf("consul: read: value %q: %w", pair.Value, err)
	}
	return list, nil
}

func (c *client) Write(ctx context.Context, list []int64, held targets.Lease, f targets.Fencing) (int64, error) {
	val, err := json.Marshal(list)
	if err != nil {
		return 0, err
	}
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	switch f {
	case targets.FencingNone:
		if _, err := c.api.KV().Put(&api.KVPair{Key: c.value, Value: val}, write(rctx)); err != nil {
			return 0, fmt.Errorf("consul: put: %w", err)
		}
		return 0, nil
	case targets.FencingToken:
		return c.writeToken(rctx, val, held.Token())
	case targets.FencingCAS:
		l, ok := held.(*lease)
		if !ok {
			return 0, errors.New("consul: cas fencing needs a consul lease")
		}
		ok, resp, _, err := c.api.Txn().Txn(api.TxnOps{
			{KV: &api.KVTxnOp{Verb: api.KVCheckSession, Key: l.key, Session: l.id}},
			{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.value, Value: val}},
		}, query(rctx))
		if err != nil {
			return 0, fmt.Errorf("consul: txn: %w", err)
		}
		if !ok {
			return 0, fmt.Errorf("%w: lock key %s is no longer held by session %s (%s)", targets.ErrFenced, l.key, l.id, txnErrors(resp))
		}
		return c.revOf(resp, c.value), nil
	}
	return 0, fmt.Errorf("consul: unknown fencing %q", f)
}

// ReadFenced raises the fence to the lease's token and reads the list in
// one transaction (check-index on the fence as read, set it, get the value),
// unless the fence holds a higher token or moved meanwhile (then the read is
// refused: only a holder with a token at least as high moves it).
func (c *client) ReadFenced(ctx context.Context, held targets.Lease) ([]int64, error) {
	token := held.Token()
	rctx, cancel := c.timeout(ctx)
	defer cancel()
	highest, index, err := c.readFence(rctx)
	if err != nil {
		return nil, err
	}
	if highest > token {
		return nil, fmt.Errorf("%w: read with token %d < highest accepted %d", targets.ErrFenced, token, highest)
	}
	check := &api.KVTxnOp{Verb: api.KVCheckIndex, Key: c.fence, Index: index}
	if index == 0 {
		check = &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: c.fence}
	}
	ok, resp, _, err := c.api.Txn().Txn(api.TxnOps{
		{KV: check},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.fence, Value: []byte(strconv.FormatInt(token, 10))}},
		{KV: &api.KVTxnOp{Verb: api.KVGet, Key: c.value}},
	}, query(rctx))
	if err != nil {
		return nil, fmt.Errorf("consul: fenced read: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: read with token %d: the fence moved under the read (%s)", targets.ErrFenced, token, txnErrors(resp))
	}
	list := []int64{}
	for _, r := range resp.Results {
		if r != nil && r.KV != nil && r.KV.Key == c.value && len(r.KV.Value) > 0 {
			if err := json.Unmarshal(r.KV.Value, &list); err != nil {
				return nil, fmt.Errorf("consul: read: value %q: %w", r.KV.Value, err)
			}
		}
	}
	return list, nil
}

// writeToken writes val if the highest accepted token is not greater than
// token, and records token as the highest.
func (c *client) writeToken(ctx context.Context, val []byte, token int64) (int64, error) {
	highest, index, err := c.readFence(ctx)
	if err != nil {
		return 0, err
	}
	if highest > token {
		return 0, fmt.Errorf("%w: token %d < highest accepted %d", targets.ErrFenced, token, highest)
	}
	check := &api.KVTxnOp{Verb: api.KVCheckIndex, Key: c.fence, Index: index}
	if index == 0 {
		check = &api.KVTxnOp{Verb: api.KVCheckNotExists, Key: c.fence}
	}
	ok, resp, _, err := c.api.Txn().Txn(api.TxnOps{
		{KV: check},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.fence, Value: []byte(strconv.FormatInt(token, 10))}},
		{KV: &api.KVTxnOp{Verb: api.KVSet, Key: c.value, Value: val}},
	}, query(ctx))
	if err != nil {
		return 0, fmt.Errorf("consul: txn: %w", err)
	}
	if !ok {
		// Another write moved the fence between our read and our
		// transaction: the transaction was rolled back.
		now := "?"
		if h, _, err := c.readFence(ctx); err == nil {
			now = strconv.FormatInt(h, 10)
		}
		return 0, fmt.Errorf("%w: token %d: the fence moved under the write (highest accepted now %s; %s)", targets.ErrFenced, token, now, txnErrors(resp))
	}
	return c.revOf(resp, c.value), nil
}

// readFence returns the highest accepted token and the fence key's
// ModifyIndex (0 when the key does not exist).
func (c *client) readFence(ctx context.Context) (int64, uint64, error) {
	pair, _, err := c.api.KV().Get(c.fence, query(ctx))
	if err != nil {
		return 0, 0, fmt.Errorf("consul: read fence: %w", err)
	}
	if pair == nil {
		return 0, 0, nil
	}
	h, err := strconv.ParseInt(string(pair.Value), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("consul: fence %q: %w", pair.Value, err)
	}
	return h, pair.ModifyIndex, nil
}

// revOf is the ModifyIndex of key's entry in a transaction's results.
func (c *client) revOf(resp *api.TxnResponse, key string) int64 {
	if resp == nil {
		return 0
	}
	for _, r := range resp.Results {
		if r != nil && r.KV != nil && r.KV.Key == key {
			return int64(r.KV.ModifyIndex)
		}
	}
	return 0
}

func txnErrors(resp *api.TxnResponse) string {
	if resp == nil || len(resp.Errors) == 0 {
		return "transaction rolled back"
	}
	var s []string
	for _, e := range resp.Errors {
		s = append(s, fmt.Sprintf("op %d: %s", e.OpIndex, e.What))
	}
	return strings.Join(s, "; ")
}
