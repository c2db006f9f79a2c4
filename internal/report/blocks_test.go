package report

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/testkit/lockappendtest"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// A workload outside this package builds its view from the exported parts,
// and what it puts in them is escaped.
func TestViewFromBlocks(t *testing.T) {
	view := func(in *Input) (*Page, error) {
		p := NewPage(in, "Two leaders in term 5.")
		p.Cards = []Card{{Label: "terms", Value: "7", Class: "bad"}}
		p.Sections = append(p.Sections,
			TableSection("terms", "Terms", "Each term and its leaders.", []string{"term", "leaders"}, [][]string{{"5", "<b>w1</b>, w2"}}),
			TextSection("notes", "Notes", "A deposed leader's entry was accepted."),
			ResultsSection(in))
		p.Sections = append(p.Sections, OperationsSections(in)...)
		return p, nil
	}
	res := &store.Results{Workload: "election", Result: &lockappend.Result{Valid: checkers.Invalid}}
	page := render(t, Input{Test: lockappendtest.TestInfo("none", 2), Results: res, View: view})
	for _, want := range []string{"Two leaders in term 5.", "<th>leaders</th>", "&lt;b&gt;w1&lt;/b&gt;, w2", "A deposed leader", `id="timeline"`, "invalid"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
