package etcd

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/fencecheck/fencecheck/targets"
)

// RecipeLockRPC is etcd's lock service (v3lock, the server-side Lock and
// Unlock RPCs that `etcdctl lock` and Jepsen's etcd test use): the server
// runs a concurrency.Mutex for the client, on the client's lease, with its
// own (the server's) version of that package. The fencing token is the
// lock key's create revision, as for the mutex.
const RecipeLockRPC = "lock-rpc"

// The v3lock service's methods (etcd's server/etcdserver/api/v3lock/v3lockpb,
// a package of the server module, which fencecheck does not depend on: the
// four messages are encoded here with protowire).
const (
	methodLock   = "/v3lockpb.Lock/Lock"
	methodUnlock = "/v3lockpb.Lock/Unlock"
)

// rawCodec passes messages encoded by the caller. Its name is "proto", the
// content-subtype etcd's servers accept: the bytes on the wire are the
// protobuf encoding of v3lockpb's messages.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("etcd: lock rpc codec: %T is not *[]byte", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("etcd: lock rpc codec: %T is not *[]byte", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

// lockRequest encodes v3lockpb.LockRequest{Name: 1, Lease: 2}.
func lockRequest(name string, lease clientv3.LeaseID) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte(name))
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(lease))
}

// unlockRequest encodes v3lockpb.UnlockRequest{Key: 1}.
func unlockRequest(key string) []byte {
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(b, []byte(key))
}

// lockResponse decodes v3lockpb.LockResponse{Header: 1, Key: 2}: the lock
// key and the header's revision (ResponseHeader's field 3).
func lockResponse(b []byte) (key string, revision int64, err error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", 0, fmt.Errorf("etcd: lock response: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType || (num != 1 && num != 2) {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return "", 0, fmt.Errorf("etcd: lock response: %w", protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return "", 0, fmt.Errorf("etcd: lock response: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 2 {
			key = string(v)
			continue
		}
		if revision, err = headerRevision(v); err != nil {
			return "", 0, err
		}
	}
	if key == "" {
		return "", 0, errors.New("etcd: lock response without a key")
	}
	return key, revision, nil
}

// headerRevision decodes ResponseHeader's revision (field 3).
func headerRevision(b []byte) (int64, error) {
	var rev int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, fmt.Errorf("etcd: lock response header: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == 3 && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, fmt.Errorf("etcd: lock response header: %w", protowire.ParseError(n))
			}
			rev, b = int64(v), b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return 0, fmt.Errorf("etcd: lock response header: %w", protowire.ParseError(n))
		}
		b = b[n:]
	}
	return rev, nil
}

// acquireRPC grants a lease, keeps it alive, and calls the Lock RPC on it,
// which blocks until the server's mutex grants the lock. The token is the
// create revision of the key the server returns, read right after; a
// server that returns a key that no longer exists (etcd#11456: the lease
// expired while the call waited) has granted a lock that no longer holds,
// and the client, like `etcdctl lock`, trusts the grant: its token is then
// the revision of the Lock response's header, and the lease's Remaining
// tells the truth (the keepalives find no lease).
func (c *client) acquireRPC(ctx context.Context) (targets.Lease, error) {
	l, err := c.grant(ctx)
	if err != nil {
		return nil, err
	}
	req := lockRequest(c.lockPfx, l.id)
	var resp []byte
	// No request timeout: the call blocks for as long as the lock is held
	// by others, up to the caller's acquire deadline (ctx).
	if err := c.cli.ActiveConnection().Invoke(ctx, methodLock, &req, &resp, grpcForceRaw); err != nil {
		l.abandon()
		return nil, fmt.Errorf("etcd: lock rpc: %w", err)
	}
	key, rev, err := lockResponse(resp)
	if err != nil {
		l.abandon()
		return nil, err
	}
	gctx, cancel := c.timeout(ctx)
	g, err := c.cli.Get(gctx, key)
	cancel()
	if err != nil {
		// Held, by the server's answer, but the token is unknown: give the
		// lock up rather than hold it without a token.
		_ = c.unlockRPC(context.Background(), key)
		l.abandon()
		return nil, fmt.Errorf("etcd: lock rpc: reading the lock key: %w", err)
	}
	l.token, l.key = rev, key
	if len(g.Kvs) > 0 {
		l.token = g.Kvs[0].CreateRevision
	}
	l.owner = clientv3.Compare(clientv3.CreateRevision(key), "=", l.token)
	l.unlock = func(ctx context.Context) error { return c.unlockRPC(ctx, key) }
	return l, nil
}

// unlockRPC calls the Unlock RPC, which deletes the lock key.
func (c *client) unlockRPC(ctx context.Context, key string) error {
	req := unlockRequest(key)
	var resp []byte
	uctx, cancel := c.timeout(ctx)
	defer cancel()
	if err := c.cli.ActiveConnection().Invoke(uctx, methodUnlock, &req, &resp, grpcForceRaw); err != nil {
		return fmt.Errorf("etcd: unlock rpc: %w", err)
	}
	return nil
}
