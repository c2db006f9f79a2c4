package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Kill crashes servers with SIGKILL, keeps them down for one to two leases,
// and restarts them on their data (the container's file system survives),
// at their addresses. With LoseUnsynced the crash is a power loss: each
// killed node's lazy disk forgets every write no fsync made durable before
// the node restarts (Disks.LoseUnsynced).
type Kill struct {
	Scope        string
	LoseUnsynced bool
}

// LoseUnsynced is kill's option: kill:SCOPE:lose-unsynced, and
// kill:lose-unsynced for every server at once (a power loss of the
// cluster).
const LoseUnsynced = "lose-unsynced"

// parseKill parses kill's scope: a server scope (one by default),
// optionally followed by :lose-unsynced; lose-unsynced alone is
// all:lose-unsynced.
func parseKill(scope string) (Fault, error) {
	lose := false
	if scope == LoseUnsynced {
		scope, lose = ScopeAll, true
	} else if s, ok := strings.CutSuffix(scope, ":"+LoseUnsynced); ok {
		scope, lose = s, true
	}
	f, err := tiered(killScopes, func(s string) Fault { return Kill{Scope: s} })(scope)
	if err != nil {
		return nil, fmt.Errorf("%w (then :%s for a power loss: kill:%s, kill:one:%s)", err, LoseUnsynced, LoseUnsynced, LoseUnsynced)
	}
	k := f.(Kill)
	k.LoseUnsynced = lose
	return k, nil
}

// Name is "kill:SCOPE", or "kill:SCOPE:lose-unsynced".
func (f Kill) Name() string {
	if f.LoseUnsynced {
		return "kill:" + f.Scope + ":" + LoseUnsynced
	}
	return "kill:" + f.Scope
}

// Applies checks the scope's precondition (Precondition): :minority needs
// three servers, :resource a resource container (a resource that lives in
// the lock service has no process of its own to kill); :lose-unsynced
// needs lazy disks (FUSE, as root) and nodes that name a data directory.
func (f Kill) Applies(s Shape) error {
	if err := scopeApplies(f.Scope, s); err != nil {
		return err
	}
	if f.LoseUnsynced {
		base, _ := splitTier(f.Scope)
		return needDisk(s, base == ScopeResource)
	}
	return nil
}

// NeedsDisk: with LoseUnsynced, the killed nodes' data is on lazy disks.
func (f Kill) NeedsDisk() bool { return f.LoseUnsynced }

// KillRecord is what a kill records besides its hold (how long its nodes
// stay down): with :lose-unsynced, what the power loss dropped, over every
// node.
type KillRecord struct {
	LostFiles *int   `json:"lost_files,omitempty"`
	LostBytes *int64 `json:"lost_bytes,omitempty"`
}

// Inject kills the servers the scope names.
func (f Kill) Inject(ctx context.Context, env Env, r *rand.Rand) (*Injection, error) {
	nodes, err := pickServers(ctx, env, r, f.Scope)
	if err != nil {
		return nil, err
	}
	down := between(r, env.Lease(), 2*env.Lease())
	var killed []string
	restart := func(ctx context.Context) error {
		var errs []error
		for _, n := range killed {
			errs = append(errs, env.Restart(ctx, n))
		}
		return errors.Join(errs...)
	}
	rec := &KillRecord{}
	var loss DiskLoss
	for _, n := range nodes {
		// Counted before the kill: a kill cut short after its SIGKILL
		// (the run ending) still needs the restart.
		killed = append(killed, n)
		if err := env.Kill(ctx, n); err != nil {
			return inPart(killed, rec, restart, err)
		}
	}
	if f.LoseUnsynced {
		// Every node is down before any disk forgets: a power loss.
		for _, n := range nodes {
			l, err := env.LoseUnsynced(ctx, n)
			if err != nil {
				return inPart(killed, rec, restart, fmt.Errorf("%s: %w", n, err))
			}
			loss.Files += l.Files
			loss.Bytes += l.Bytes
		}
		rec.LostFiles, rec.LostBytes = &loss.Files, &loss.Bytes
	}
	return &Injection{
		Nodes: nodes, Hold: down,
		Record:  rec,
		Recover: restart,
	}, nil
}

func (Kill) down() bool { return true }

// tellRecord says what a power loss (:lose-unsynced) made the disks forget.
func (Kill) tellRecord(v history.FaultValue) ([]string, error) {
	rec, err := decodeRecord[KillRecord](v)
	var out []string
	if rec.LostFiles != nil {
		s := fmt.Sprintf("the disks forgot %d %s", *rec.LostFiles, plural(*rec.LostFiles, "file"))
		if rec.LostBytes != nil {
			s += fmt.Sprintf(" (%d %s)", *rec.LostBytes, plural(*rec.LostBytes, "byte"))
		}
		out = append(out, s+" that no fsync had made durable")
	}
	return out, err
}
