package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fencecheck/fencecheck/targets"
)

// The lock-store: the list the lock protects is kept in an annotation of
// the lock's own Lease, and the highest token accepted in another. Kubernetes
// has no transaction over two objects, so keeping them in the Lease is what
// lets a cas write be tied to the lock's state in one request: every write
// is a JSON patch (RFC 6902), which the apiserver applies to the object as
// it stands, all of it or nothing, and whose "test" operations are the
// conditions:
//
//   - none: set the list, no test;
//   - token: test that the fence is what was read (and not above the
//     lease's token), then set the fence to the token and the list;
//   - cas: test that the Lease's holder is the writer's candidate, then set
//     the list.
//
// A Lease's annotations hold at most 256 KiB, some 25,000 elements.
const (
	annList  = "fencecheck.io/list"
	annFence = "fencecheck.io/fence"
	// The annotations as JSON pointers ('/' escaped as ~1).
	ptrList   = "/metadata/annotations/fencecheck.io~1list"
	ptrFence  = "/metadata/annotations/fencecheck.io~1fence"
	ptrHolder = "/spec/holderIdentity"
)

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Reset empties the list and the fence, creating the Lease (with no
// holder) where it is missing.
func (c *client) Reset(ctx context.Context) error {
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	_, err := c.cs.Leases(namespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: c.name, Annotations: map[string]string{annList: "[]", annFence: "0"}},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{annList: "[]", annFence: "0"}}})
		_, err = c.cs.Leases(namespace).Patch(ctx, c.name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		return fmt.Errorf("kubernetes: reset: %w", err)
	}
	return nil
}

// state is the list and the fence as read, in their annotations' text
// (what a test operation compares).
type state struct {
	list, fence string
}

func (c *client) get(ctx context.Context) (state, error) {
	ctx, cancel := c.timeout(ctx)
	defer cancel()
	l, err := c.cs.Leases(namespace).Get(ctx, c.name, metav1.GetOptions{})
	if err != nil {
		return state{}, err
	}
	return state{list: l.Annotations[annList], fence: l.Annotations[annFence]}, nil
}

func (s state) decode() ([]int64, int64, error) {
	list := []int64{}
	if err := json.Unmarshal([]byte(s.list), &list); err != nil {
		return nil, 0, fmt.Errorf("kubernetes: the list annotation %q: %w", s.list, err)
	}
	fence, err := strconv.ParseInt(s.fence, 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("kubernetes: the fence annotation %q: %w", s.fence, err)
	}
	return list, fence, nil
}

// Read returns the list.
func (c *client) Read(ctx context.Context) ([]int64, error) {
	s, err := c.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: read: %w", err)
	}
	list, _, err := s.decode()
	return list, err
}

// patch applies ops. The apiserver answers a JSON patch whose test
// operation fails with a bare 422 (Invalid, no cause), as it answers other
// patches it cannot apply; so on a 422 failed asks the Lease as it now
// stands whether a test would fail: tested is true when it would (nothing
// was written: the Lease was not as read), and the 422 is an error
// otherwise.
func (c *client) patch(ctx context.Context, ops []patchOp, failed func(*coordinationv1.Lease) bool) (rev int64, tested bool, err error) {
	pctx, cancel := c.timeout(ctx)
	defer cancel()
	b, err := json.Marshal(ops)
	if err != nil {
		return 0, false, err
	}
	l, err := c.cs.Leases(namespace).Patch(pctx, c.name, types.JSONPatchType, b, metav1.PatchOptions{})
	if err == nil {
		rev, _ = strconv.ParseInt(l.ResourceVersion, 10, 64)
		return rev, false, nil
	}
	if !apierrors.IsInvalid(err) || failed == nil {
		return 0, false, err
	}
	gctx, cancel := c.timeout(ctx)
	defer cancel()
	now, gerr := c.cs.Leases(namespace).Get(gctx, c.name, metav1.GetOptions{})
	if gerr != nil {
		return 0, false, fmt.Errorf("%w (and the Lease could not be read to tell why: %w)", err, gerr)
	}
	if failed(now) {
		return 0, true, nil
	}
	return 0, false, err
}

// fenced moves the fence to lease's token, keeping the list as it was
// read, and returns that list; ErrFenced when the fence is above the
// token already. list, if not nil, is written with the fence.
func (c *client) fenced(ctx context.Context, ls targets.Lease, list []int64) ([]int64, int64, error) {
	tok := ls.Token()
	for {
		s, err := c.get(ctx)
		if err != nil {
			return nil, 0, err
		}
		cur, fence, err := s.decode()
		if err != nil {
			return nil, 0, err
		}
		if tok < fence {
			return nil, 0, fmt.Errorf("%w: token %d is below the fence %d", targets.ErrFenced, tok, fence)
		}
		ops := []patchOp{{Op: "test", Path: ptrFence, Value: s.fence}}
		if list == nil {
			if tok == fence {
				return cur, 0, nil
			}
			ops = append(ops, patchOp{Op: "test", Path: ptrList, Value: s.list})
		} else {
			b, _ := json.Marshal(list)
			ops = append(ops, patchOp{Op: "replace", Path: ptrList, Value: string(b)})
		}
		ops = append(ops, patchOp{Op: "replace", Path: ptrFence, Value: strconv.FormatInt(tok, 10)})
		rev, tested, err := c.patch(ctx, ops, func(now *coordinationv1.Lease) bool {
			// The fence only grows: it moved, or the list did under a
			// fenced read.
			return now.Annotations[annFence] != s.fence || list == nil && now.Annotations[annList] != s.list
		})
		if err != nil {
			return nil, 0, err
		}
		if !tested {
			return cur, rev, nil
		}
		// Another write came between: read again.
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// ReadFenced is Store.ReadFenced.
func (c *client) ReadFenced(ctx context.Context, ls targets.Lease) ([]int64, error) {
	list, _, err := c.fenced(ctx, ls, nil)
	if err != nil && !errors.Is(err, targets.ErrFenced) {
		err = fmt.Errorf("kubernetes: fenced read: %w", err)
	}
	return list, err
}

// Write is Store.Write.
func (c *client) Write(ctx context.Context, list []int64, ls targets.Lease, f targets.Fencing) (int64, error) {
	if list == nil {
		list = []int64{} // an empty list, not a fenced read (fenced's nil)
	}
	b, _ := json.Marshal(list)
	switch f.Applied() {
	case targets.FencingNone:
		rev, _, err := c.patch(ctx, []patchOp{{Op: "replace", Path: ptrList, Value: string(b)}}, nil)
		if err != nil {
			return 0, fmt.Errorf("kubernetes: write: %w", err)
		}
		return rev, nil
	case targets.FencingToken:
		_, rev, err := c.fenced(ctx, ls, list)
		if err != nil && !errors.Is(err, targets.ErrFenced) {
			err = fmt.Errorf("kubernetes: token write: %w", err)
		}
		return rev, err
	case targets.FencingCAS:
		l, ok := ls.(held)
		if !ok {
			return 0, fmt.Errorf("%w: kubernetes: cas fencing needs a lease of this target's own leader election", targets.ErrBadConfig)
		}
		rev, tested, err := c.patch(ctx, []patchOp{{Op: "test", Path: ptrHolder, Value: l.holder()}, {Op: "replace", Path: ptrList, Value: string(b)}},
			func(now *coordinationv1.Lease) bool {
				// A candidate's identity is its own: once the Lease has
				// another holder, it never comes back to it.
				return now.Spec.HolderIdentity == nil || *now.Spec.HolderIdentity != l.holder()
			})
		if err != nil {
			return 0, fmt.Errorf("kubernetes: cas write: %w", err)
		}
		if tested {
			return 0, fmt.Errorf("%w: the Lease is no longer held by %s", targets.ErrFenced, l.holder())
		}
		return rev, nil
	}
	return 0, fmt.Errorf("%w: kubernetes: fencing %q", targets.ErrBadConfig, f)
}
