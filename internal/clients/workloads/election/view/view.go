// Package view is the election workload's report page. It lives apart
// from the workload (package election) so that the worker binary, which
// links the workloads, links no report; package views pairs it with the
// workload.
package view

import (
	"fmt"

	"github.com/fencecheck/fencecheck/internal/clients/workloads/election"
	"github.com/fencecheck/fencecheck/internal/report"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// View is the election report: the verdict, the stories of deposed
// leaders, the leaderships, and the generic timeline and results.
func View(in *report.Input) (*report.Page, error) {
	r, err := decode(in)
	if err != nil {
		return report.GenericView(in)
	}
	stories := election.Stories(in.AllEvents(), r, in.Test.Concurrency)
	headline := fmt.Sprintf("%d leaderships; %d acknowledged entries lost, %d forks of the log, %d entries of old terms refused.",
		r.Leaderships, r.LostUpdates.Lost, r.Forks, r.FenceRejections)
	p := report.NewPage(in, headline)
	class := func(bad bool) string {
		if bad {
			return "bad"
		}
		return "good"
	}
	p.Cards = []report.Card{
		{Label: "leaderships", Value: fmt.Sprint(r.Leaderships)},
		{Label: "lost entries", Value: fmt.Sprintf("%d of %d", r.LostUpdates.Lost, r.LostUpdates.Acknowledged), Class: class(r.LostUpdates.Lost > 0)},
		{Label: "forked log", Value: fmt.Sprint(r.Forks), Class: class(r.Forks > 0)},
		{Label: "refused entries", Value: fmt.Sprint(r.FenceRejections)},
		{Label: "split brain", Value: fmt.Sprint(r.SplitBrain), Note: "leaderships that went on after another was elected"},
	}
	var paras []string
	for _, s := range stories {
		paras = append(paras, s.Text)
	}
	if len(paras) == 0 {
		paras = []string{"No deposed leader's entry reached the log: no fork, no lost entry, no refused entry."}
	}
	p.Sections = append(p.Sections, report.TextSection("stories", "Deposed leaders", paras...))
	c := r.Checkers
	rows := [][]string{
		{checkers.NameLinearizable, c.Linearizable.Valid.String(), c.Linearizable.Message},
		{checkers.NameLostUpdates, c.LostUpdates.Valid.String(), c.LostUpdates.Message},
		{election.NameTerms, c.Terms.Valid.String(), c.Terms.Message},
		{election.NameForkedLog, c.ForkedLog.Valid.String(), c.ForkedLog.Message},
		{election.NameSplitBrain, c.SplitBrain.Valid.String(), c.SplitBrain.Message},
		{checkers.NameStats, c.Stats.Valid.String(), c.Stats.Message},
	}
	p.Sections = append(p.Sections, report.TableSection("checkers", "Checkers", "Each checker's verdict; the run's is the worst of them (split brain is informational).",
		[]string{"checker", "verdict", "what it found"}, rows))
	p.Sections = append(p.Sections, report.OperationsSections(in)...)
	p.Sections = append(p.Sections, report.TokensSection(tokensInput(in, r)))
	p.Sections = append(p.Sections, report.ResultsSection(in))
	return p, nil
}

// decode is the run's election result (the callers of a View decode
// results.json with the workload's Decode first).
func decode(in *report.Input) (*election.Result, error) {
	if r, ok := in.Results.Result.(*election.Result); ok {
		return r, nil
	}
	return nil, fmt.Errorf("election: no election result")
}
