package lockappend

import (
	"context"
	"errors"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/targets"
)

// Config is how a worker runs its critical sections.
type Config struct {
	Fencing targets.Fencing `json:"fencing"`
	// AcquireTimeout bounds the wait for the lock; a client that does not
	// get it in time fails the operation (nothing was written).
	AcquireTimeout time.Duration `json:"acquire_timeout"`
	// Margin is the lease time a careful client wants left before it goes
	// ahead; with less, it fails the operation without writing.
	Margin time.Duration `json:"margin"`
	// Work is the time between the lease check and the write: the window
	// where a pause or a partition lands.
	Work time.Duration `json:"work"`
}

// Reporter receives the phases of a critical section as they happen (the
// worker forwards them to the harness at once). v is nil or one of the phase
// value types of ops.go.
type Reporter func(phase string, v any)

// Execute runs one critical section: acquire, read, check the lease, work,
// write the list with element appended (fenced as cfg says), release. It
// never retries. It returns the completion type and value:
//
//   - Fail when nothing can have been written: the lock was not acquired,
//     the read failed, the lease was too short, or fencing rejected the read
//     or the write;
//   - Info when the write was sent and its outcome is unknown;
//   - Ok when the write was acknowledged.
//
// The lock is released before Execute returns, so that every phase of the
// operation is reported before its completion. skew, if not nil, is the
// offset of the client's lease clock: a clock behind (negative) makes the
// client believe its lease has that much more time left.
func Execute(ctx context.Context, c targets.Client, cfg Config, element int64, report Reporter, skew func() time.Duration) (history.Type, Completion) {
	done := Completion{Element: element}
	actx, cancel := context.WithTimeout(ctx, cfg.AcquireTimeout)
	lease, err := c.Acquire(actx)
	cancel()
	if err != nil {
		done.Reason, done.Error = ReasonNotAcquired, err.Error()
		return history.Fail, done
	}
	done.Token = lease.Token()
	report(PhaseAcquired, Acquired{Token: done.Token})
	defer func() {
		report(PhaseReleasing, nil)
		r := Released{}
		if err := lease.Release(context.WithoutCancel(ctx)); err != nil {
			r.Error = err.Error()
		}
		report(PhaseReleased, r)
	}()

	var list []int64
	if cfg.Fencing == targets.FencingToken {
		list, err = c.ReadFenced(ctx, lease)
	} else {
		list, err = c.Read(ctx)
	}
	switch {
	case errors.Is(err, targets.ErrFenced):
		// A newer holder has been at the resource: nothing will be written.
		done.Reason, done.Error = ReasonFenced, err.Error()
		return history.Fail, done
	case err != nil:
		done.Reason, done.Error = ReasonReadFailed, err.Error()
		return history.Fail, done
	}
	if list == nil {
		list = []int64{} // read, and empty: never null in the history
	}
	done.Read = list
	report(PhaseRead, ReadValue{Value: list})

	left := lease.Remaining()
	if skew != nil {
		left -= skew()
	}
	ok := left > cfg.Margin
	report(PhaseChecked, Checked{RemainingMS: left.Milliseconds(), OK: ok})
	if !ok {
		done.Reason = ReasonLeaseShort
		return history.Fail, done
	}

	if cfg.Work > 0 {
		select {
		case <-time.After(cfg.Work):
		case <-ctx.Done():
			done.Reason, done.Error = "cancelled", ctx.Err().Error()
			return history.Fail, done
		}
	}

	report(PhaseWriteSent, nil)
	written := append(append(make([]int64, 0, len(list)+1), list...), element)
	rev, err := c.Write(ctx, written, lease, cfg.Fencing)
	switch {
	case errors.Is(err, targets.ErrFenced):
		done.Reason, done.Error = ReasonFenced, err.Error()
		return history.Fail, done
	case err != nil:
		done.Reason, done.Error = "write-unknown", err.Error()
		return history.Info, done
	}
	done.Rev = rev
	return history.Ok, done
}
