package cli

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

	"github.com/fencecheck/fencecheck/internal/clientproto"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/resources"
	"github.com/fencecheck/fencecheck/internal/runs"
	"github.com/fencecheck/fencecheck/internal/tables"
	"github.com/fencecheck/fencecheck/internal/worker"
	"github.com/fencecheck/fencecheck/targets"
)

// stepPrefix marks a conformance step in client-probe's output (its log
// lines are mixed in); endPrefix its last line, with the number of steps
// it reported, so that a report cut short is never read as a shorter one.
// The probe (worker.CmdClientProbe) runs in the worker container.
const (
	stepPrefix = worker.StepPrefix
	endPrefix  = worker.EndPrefix
)

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
		if rest, ok := strings.CutPrefix(line, stepPrefix); ok {
			var s clientproto.Step
			if err := json.Unmarshal([]byte(rest), &s); err != nil {
				return steps, logs, fmt.Errorf("%w: step %d (%d bytes) does not decode: %v", errProbeReport, len(steps)+1, len(rest), err)
			}
			steps = append(steps, s)
			continue
		}
		if rest, ok := strings.CutPrefix(line, endPrefix); ok {
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil || end >= 0 {
				return steps, logs, fmt.Errorf("%w: a malformed or second end line %q", errProbeReport, clip(line, 80))
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

// cmdClientCheck is `fencecheck client-check`: a client program's
// conformance run against a real single-node lock service. Exit 0 when
// every check passed, 1 when one failed.
func cmdClientCheck(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := verbFlags("client-check", stderr, "Starts one server of the target and one worker container running your program, walks the\nprogram through the client protocol's steps and prints each step's result. Exit 0 if every\nstep passed, 1 if one failed.")
	dir := fs.String("client-dir", "", "the client's directory (client.json and the program)")
	cmdline := fs.String("client-cmd", "", "the command that starts the program, instead of client.json's")
	image := fs.String("client-image", "", "an image of yours to run the program in, instead of fencecheck's worker image")
	target := fs.String("target", "", "lock service to check against (default: client.json's \"target\", or the first of its \"targets\", else etcd): "+targetNames())
	fencing := fs.String("fencing", "none", "fencing mode sent in init (none, token, cas)")
	ttl := fs.Duration("ttl", 0, "lease TTL (default 10s, or the target's default if longer: a lock that does not renew holds it through the checks)")
	timeout := fs.Duration("timeout", 10*time.Second, "how long each reply may take (an acquire may wait for the lock besides)")
	if err := parseVerb(fs, args); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *dir == "" {
		return 0, fmt.Errorf("%w: --client-dir is required", errUsage)
	}
	if *timeout <= 0 {
		return 0, fmt.Errorf("%w: --timeout must be positive", errUsage)
	}
	spec, err := clientproto.Load(*dir, *cmdline, *image)
	if err != nil {
		return 0, err
	}
	name := *target
	if names := spec.Manifest.TargetNames(); name == "" && len(names) > 0 {
		name = names[0]
	}
	if name == "" {
		name = "etcd"
	}
	t, err := lookupTarget(name)
	if err != nil {
		return 0, err
	}
	f, err := targets.ParseFencing(*fencing)
	if err != nil {
		return 0, err
	}
	lockStore := tables.Resources[0]
	if !resources.Offers(lockStore, f) {
		return 0, fmt.Errorf("%w: fencing %s is not one the lock store offers", targets.ErrBadConfig, f)
	}
	if *ttl == 0 {
		// Long enough that a lock that does not renew its lease (redis-py's)
		// still holds it through the checks on a loaded machine.
		*ttl = max(targets.DefaultTTL(t), 10*time.Second)
	}
	cc := targets.ClientConfig{TTL: *ttl, RPCTimeout: 5 * time.Second}
	if err := t.Validate(cc); err != nil {
		return 0, err
	}
	workerBin, err := parts.WorkerBinary(stderr)
	if err != nil {
		return 0, err
	}
	if err := spec.RunBuild(ctx, stderr); err != nil {
		return 0, err
	}
	stage := func(format string, a ...any) { fmt.Fprintf(stderr, "fencecheck: %s\n", fmt.Sprintf(format, a...)) }
	stage("client-check of %s (%s) against %s, one node, TTL %s", spec.Name(), spec.Program, t.Name(), *ttl)
	var eng runs.Engine
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
	limit := 20**timeout + time.Minute
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out, perr := cl.Exec(pctx, "w1", "/usr/local/bin/fencecheck", worker.CmdClientProbeName,
		"--program", string(progJSON), "--init", string(initJSON), "--timeout", timeout.String())
	steps, logs, err := parseProbe(out)
	if err != nil || len(steps) == 0 {
		if err == nil {
			err = fmt.Errorf("%w: it reported nothing", errProbeReport)
		}
		for _, l := range logs[max(0, len(logs)-10):] {
			fmt.Fprintf(stderr, "  %s\n", clip(l, 400))
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
				fmt.Fprintf(stdout, "  %s\n", clip(l, 400))
			}
		}
		fmt.Fprintf(stdout, "\nFAIL  %s: %d of %d checks failed\n", spec.Name(), failed, len(steps))
		return exitInvalid, nil
	}
	fmt.Fprintf(stdout, "\nOK  %s: %d checks passed against %s\n", spec.Name(), len(steps), t.Name())
	return exitValid, nil
}
