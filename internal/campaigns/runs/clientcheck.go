package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/clients/tables"
	"github.com/fencecheck/fencecheck/internal/clients/worker"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/targets"
)

// ClientCheck is a client program's conformance run (client-check): its
// directory, command and image (clientproto.Load), the target to check it
// against ("": client.json's, else etcd), the fencing mode sent in init,
// the lease TTL (0: 10 s, or the target's default if longer) and how long
// each reply may take.
type ClientCheck struct {
	Dir, Cmd, Image string
	Target, Fencing string
	TTL, Timeout    time.Duration
}

// ClientCheck starts one server of the target and one worker container
// running the program, walks the program through the client protocol's
// steps and prints each step's result on stdout. It returns 0 when every
// step passed, 1 when one failed; a bad program, target or setting is an
// error that wraps targets.ErrBadConfig or cmdline.ErrUsage.
func (p Parts) ClientCheck(ctx context.Context, c ClientCheck, stdout, stderr io.Writer) (int, error) {
	ttl := c.TTL
	spec, err := clientproto.Load(c.Dir, c.Cmd, c.Image)
	if err != nil {
		return 0, err
	}
	name := c.Target
	if names := spec.Manifest.TargetNames(); name == "" && len(names) > 0 {
		name = names[0]
	}
	if name == "" {
		name = "etcd"
	}
	t, err := p.LookupTarget(name)
	if err != nil {
		return 0, err
	}
	f, err := targets.ParseFencing(c.Fencing)
	if err != nil {
		return 0, err
	}
	lockStore := DefaultResource()
	if !resources.Offers(lockStore, f) {
		return 0, fmt.Errorf("%w: fencing %s is not one the lock store offers", targets.ErrBadConfig, f)
	}
	if ttl == 0 {
		// Long enough that a lock that does not renew its lease (redis-py's)
		// still holds it through the checks on a loaded machine.
		ttl = max(targets.DefaultTTL(t), 10*time.Second)
	}
	cc := targets.ClientConfig{TTL: ttl, RPCTimeout: 5 * time.Second}
	if err := t.Validate(cc); err != nil {
		return 0, err
	}
	workerBin, err := p.WorkerBinary(stderr)
	if err != nil {
		return 0, err
	}
	if err := spec.RunBuild(ctx, stderr); err != nil {
		return 0, err
	}
	stage := func(format string, a ...any) { fmt.Fprintf(stderr, "fencecheck: %s\n", fmt.Sprintf(format, a...)) }
	stage("client-check of %s (%s) against %s, one node, TTL %s", spec.Name(), spec.Program, t.Name(), ttl)
	var eng Engine
	defer eng.Close()
	e, err := eng.Get(ctx)
	if err != nil {
		return 0, err
	}
	cl, err := harness.StartCluster(ctx, harness.ClusterConfig{
		Engine: e, Target: t, Nodes: 1, Workers: 1, Client: cc,
		Resources:     []harness.ResourceUse{{Resource: lockStore, Fencing: f}},
		ClientProgram: &spec, WorkerBinary: workerBin, ReadyTimeout: 60 * time.Second,
		Log: slog.New(slog.DiscardHandler), Stage: stage,
	})
	if err != nil {
		if cl != nil {
			cl.Close("")
		}
		return 0, err
	}
	defer cl.Close("")
	progJSON, _ := json.Marshal(spec.Program)
	initJSON, _ := json.Marshal(cl.ProgramInit())
	// The probe's own bound: every step's reply, the acquires' waits, and
	// the starts of two processes.
	limit := 20*c.Timeout + time.Minute
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out, perr := cl.Exec(pctx, "w1", "/usr/local/bin/fencecheck", worker.CmdClientProbeName,
		"--program", string(progJSON), "--init", string(initJSON), "--timeout", c.Timeout.String())
	steps, logs, err := parseProbe(out)
	if err != nil || len(steps) == 0 {
		if err == nil {
			err = fmt.Errorf("%w: it reported nothing", errProbeReport)
		}
		for _, l := range logs[max(0, len(logs)-10):] {
			fmt.Fprintf(stderr, "  %s\n", safetext.Clip(l, 400))
		}
		return 0, fmt.Errorf("%w: the probe in the worker container: %w (exec: %v)", harness.ErrHarness, err, perr)
	}
	failed := 0
	for _, s := range steps {
		mark := "ok  "
		if !s.OK {
			mark = "FAIL"
			failed++
		}
		fmt.Fprintf(stdout, "%s %-16s %7s  %s\n", mark, s.Name, s.Elapsed.Round(time.Millisecond), s.Detail)
		if s.Line != "" {
			fmt.Fprintf(stdout, "     %-16s          offending line: %q\n", "", s.Line)
		}
	}
	if failed > 0 {
		if len(logs) > 0 {
			fmt.Fprintf(stdout, "\nthe program's stderr and the probe's log (last lines):\n")
			for _, l := range logs[max(0, len(logs)-10):] {
				fmt.Fprintf(stdout, "  %s\n", safetext.Clip(l, 400))
			}
		}
		fmt.Fprintf(stdout, "\nFAIL  %s: %d of %d checks failed\n", spec.Name(), failed, len(steps))
		return cmdline.ExitInvalid, nil
	}
	fmt.Fprintf(stdout, "\nOK  %s: %d checks passed against %s\n", spec.Name(), len(steps), t.Name())
	return cmdline.ExitValid, nil
}

// errProbeReport: client-probe's report could not be read whole.
var errProbeReport = errors.New("client-probe's report is incomplete")

// parseProbe reads client-probe's output: the steps it reported, in order,
// and its other lines (the program's stderr and the probe's log). It fails
// with errProbeReport unless every step line decodes and the END line
// counts exactly the steps read: a step with no result is never taken for
// a pass.
func parseProbe(out string) ([]clientproto.Step, []string, error) {
	var steps []clientproto.Step
	var logs []string
	end := -1
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, worker.StepPrefix); ok {
			var s clientproto.Step
			if err := json.Unmarshal([]byte(rest), &s); err != nil {
				return steps, logs, fmt.Errorf("%w: step %d (%d bytes) does not decode: %v", errProbeReport, len(steps)+1, len(rest), err)
			}
			steps = append(steps, s)
			continue
		}
		if rest, ok := strings.CutPrefix(line, worker.EndPrefix); ok {
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil || end >= 0 {
				return steps, logs, fmt.Errorf("%w: a malformed or second end line %q", errProbeReport, safetext.Clip(line, 80))
			}
			end = n
			continue
		}
		if line != "" {
			logs = append(logs, line)
		}
	}
	switch {
	case end < 0:
		return steps, logs, fmt.Errorf("%w: it ended after %d steps without its end line", errProbeReport, len(steps))
	case end != len(steps):
		return steps, logs, fmt.Errorf("%w: it reported %d steps, %d were read", errProbeReport, end, len(steps))
	}
	return steps, logs, nil
}

// DefaultResource is the resource a run protects by default: the lock
// service's own store (tables.Resources' first).
func DefaultResource() resources.Resource { return tables.Resources[0] }
