package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/history"
	la "github.com/fencecheck/fencecheck/internal/base/history/lockappend"
	"github.com/fencecheck/fencecheck/internal/campaigns/scenarios"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/targets"
)

// The demo passes only when what the clients saw and the checkers' verdict
// agree with each story's claim.
func TestDemoVerdict(t *testing.T) {
	unfenced := scenarios.Story{Fencing: targets.FencingNone, TokenA: 4, TokenB: 7, AResult: history.Ok, BLost: true, Valid: checkers.Invalid}
	fenced := scenarios.Story{Fencing: targets.FencingToken, TokenA: 13, TokenB: 16, AResult: history.Fail, AReason: la.ReasonFenced, Valid: checkers.Valid}
	var b bytes.Buffer
	if code := demoVerdict(&b, []scenarios.Story{unfenced, fenced}); code != exitValid {
		t.Fatalf("exit %d for stories as expected:\n%s", code, b.String())
	}
	for name, stories := range map[string][]scenarios.Story{
		"unfenced story the checkers call valid": {func() scenarios.Story { s := unfenced; s.Valid = checkers.Valid; return s }(), fenced},
		"fenced story the checkers call invalid": {unfenced, func() scenarios.Story { s := fenced; s.Valid = checkers.Invalid; return s }()},
		"fenced story the checkers cannot judge": {unfenced, func() scenarios.Story { s := fenced; s.Valid = checkers.Unknown; return s }()},
		"B's update kept unfenced":               {func() scenarios.Story { s := unfenced; s.BLost = false; return s }(), fenced},
		"one story":                              {unfenced},
	} {
		b.Reset()
		if code := demoVerdict(&b, stories); code != exitInvalid || !strings.Contains(b.String(), "did not show") {
			t.Errorf("%s: exit %d, want 1:\n%s", name, code, b.String())
		}
	}
}

func TestElectionDemoVerdict(t *testing.T) {
	unfenced := scenarios.Story{Fencing: targets.FencingNone, TokenA: 4, TokenB: 5, AResult: history.Ok, BLost: true, Valid: checkers.Invalid}
	fenced := scenarios.Story{Fencing: targets.FencingTerm, TokenA: 11, TokenB: 13, AResult: history.Fail, AReason: la.ReasonFenced, Valid: checkers.Valid}
	var b bytes.Buffer
	if code := electionVerdict(&b, []scenarios.Story{unfenced, fenced}); code != exitValid || !strings.Contains(b.String(), "the term did") {
		t.Fatalf("exit %d for stories as expected:\n%s", code, b.String())
	}
	for name, stories := range map[string][]scenarios.Story{
		"unfenced story the checkers call valid": {func() scenarios.Story { s := unfenced; s.Valid = checkers.Valid; return s }(), fenced},
		"old entry accepted with term fencing":   {unfenced, func() scenarios.Story { s := fenced; s.AResult, s.AReason = history.Ok, ""; return s }()},
		"term story the checkers cannot judge":   {unfenced, func() scenarios.Story { s := fenced; s.Valid = checkers.Unknown; return s }()},
		"one story":                              {fenced},
	} {
		b.Reset()
		if code := electionVerdict(&b, stories); code != exitInvalid || !strings.Contains(b.String(), "did not show") {
			t.Errorf("%s: exit %d, want 1:\n%s", name, code, b.String())
		}
	}
}

// The demo's TTL is the target's profile's unless --ttl is given; one the
// target cannot honour is refused before any container starts.
func TestDemoTTLFromProfile(t *testing.T) {
	var out, errb bytes.Buffer
	_, err := cmdDemo(context.Background(), []string{"--target", "consul", "--ttl", "2s", "--results", t.TempDir()}, &out, &errb)
	if !errors.Is(err, targets.ErrBadConfig) || !strings.Contains(err.Error(), "at least 10s") {
		t.Fatalf("demo --target consul --ttl 2s: %v, want a bad configuration", err)
	}
}
