package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/fencecheck/fencecheck/internal/campaigns/runs"
	"github.com/fencecheck/fencecheck/internal/campaigns/scenarios"
	"github.com/fencecheck/fencecheck/targets"
)

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := verbFlags("demo", stderr, "Plays the seed story on a real cluster, unfenced and then with token fencing: A acquires the lock,\n"+
		"checks its lease and is frozen by SIGSTOP; C is refused; the lease expires; B acquires with a\n"+
		"higher token and writes; A resumes and writes. Exit 0 only if the unfenced story lost B's update\n"+
		"and the fenced story rejected A's write.\n\n"+
		"With --election: A leads with term Ta and is partitioned inside its leader work; B is elected with\n"+
		"term Tb > Ta and appends an entry; the partition heals and A appends its entry of term Ta. Exit 0 only\n"+
		"if the unfenced log accepted it (forked) and the term-fenced log refused it.\n\n")
	target := fs.String("target", "etcd", "system under test: "+targetNames())
	nodes := fs.Int("nodes", 0, "number of servers (default: the target's usual cluster)")
	ttl := fs.Duration("ttl", 0, "lease TTL of the lock (default: the target's profile's, as a run's: 2s, Consul 10s)")
	resultsDir := fs.String("results", "./results", "results directory (the stories are stored as demo-none, demo-token; with --election demo-none, demo-term)")
	electionStory := fs.Bool("election", false, "play the leader-election story instead: an old leader partitioned during an election appends an entry of its old term, unfenced and with --fencing term")
	if err := parseVerb(fs, args); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	t, err := lookupTarget(*target)
	if err != nil {
		return 0, err
	}
	if *nodes == 0 {
		*nodes = targets.DefaultNodes(t)
	}
	if _, err := t.Nodes(*nodes); err != nil {
		return 0, err
	}
	workerBin, err := parts.WorkerBinary(stderr)
	if err != nil {
		return 0, err
	}
	ui := runs.NewProgress(stderr, false)
	script, verdict := scenarios.Demos[0], demoVerdict
	if *electionStory {
		script, verdict = scenarios.Demos[1], electionVerdict
	}
	var eng runs.Engine
	defer eng.Close()
	e, err := eng.Get(ctx)
	if err != nil {
		return 0, err
	}
	cfg := scenarios.Config{
		Engine: e,
		Target: t, Resource: runs.DefaultResource(), Nodes: *nodes, TTL: *ttl, Results: *resultsDir, WorkerBinary: workerBin,
		Fencings: script.Fencings, Script: scenarios.DemoName,
		Log:   slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Stage: ui.Stage, Out: stdout,
	}
	stories, err := script.Play(ctx, cfg)
	if err != nil {
		return 0, err
	}
	return verdict(stdout, stories), nil
}

// demoVerdict prints what each story showed and returns the demo's exit
// code: 0 only if there are two stories and each showed what it must, in
// what the clients saw and in the checkers' verdict on its history
// (scenarios.Story.Shows); else 1.
func demoVerdict(stdout io.Writer, stories []scenarios.Story) int {
	return storiesVerdict(stdout, stories, func(s scenarios.Story) string {
		if s.Fencing == targets.FencingNone {
			return fmt.Sprintf("unfenced: A's stale write (token %d) was %s and B's update was %s", s.TokenA, accepted(s), lostOrKept(s))
		}
		return fmt.Sprintf("%s fencing: A's stale write (token %d < %d) was %s and B's update was %s", s.Fencing, s.TokenA, s.TokenB, accepted(s), lostOrKept(s))
	}, "Only the resource can stop a stale holder: the fencing token did.")
}

// electionVerdict is demoVerdict for the election stories: the unfenced
// log must accept the old leader's entry and lose the new leader's
// (invalid), the term-fenced log refuse it (valid).
func electionVerdict(stdout io.Writer, stories []scenarios.Story) int {
	return storiesVerdict(stdout, stories, func(s scenarios.Story) string {
		return fmt.Sprintf("fencing %s: the old leader's entry (term %d, after term %d) was %s and the new leader's entry was %s",
			s.Fencing, s.TokenA, s.TokenB, accepted(s), lostOrKept(s))
	}, "Only the log can stop a deposed leader: the term did, as a Raft follower refuses an old term.")
}

// storiesVerdict prints each story's line (what), whether it showed what
// it must (scenarios.Story.Shows) and the checkers' verdict, then moral if
// both stories did; it returns 0 only then, else 1.
func storiesVerdict(stdout io.Writer, stories []scenarios.Story, what func(scenarios.Story) string, moral string) int {
	fmt.Fprintln(stdout)
	ok := len(stories) == 2
	for _, s := range stories {
		mark := "as expected"
		if !s.Shows() {
			mark, ok = "NOT as expected", false
		}
		fmt.Fprintf(stdout, "%s; the checkers say %s: %s\n", what(s), s.Valid, mark)
	}
	if !ok {
		fmt.Fprintln(stdout, "demo: the stories did not show the expected outcome")
		return exitInvalid
	}
	fmt.Fprintln(stdout, moral)
	return exitValid
}

func accepted(s scenarios.Story) string {
	if s.AResult == "ok" {
		return "accepted"
	}
	return "rejected (" + s.AReason + ")"
}

func lostOrKept(s scenarios.Story) string {
	if s.BLost {
		return "lost"
	}
	return "kept"
}
