package report

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
)

// The parts a workload's own View builds its Page from, so that a workload
// keeps its view in its own folder: cards for the header, and sections.
// Faults, configuration and files are added to every page.

// Card is a key figure in a page's header: a label, a value, a note; Class
// is "", "bad", "good" or "warn".
type Card = card

// Section is one part of a page: a heading and what is under it.
type Section = section

// Lead is a story in one line in a page's header, linked to where the page
// tells it: At is its time, Class "bad" or "good".
type Lead = lead

// NewPage is a page with the verdict, a title naming the run and a headline,
// and the configuration at a glance.
func NewPage(in *Input, headline string) *Page {
	p := verdictPage(in)
	p.Headline = headline
	p.Config = configCards(in.Test)
	return p
}

// verdictPage is a page with the run's verdict and its title: an invalid
// run that is not judged (UnfencedFinding) is "invalid (expected)", as
// the index shows it, not a failure.
func verdictPage(in *Input) *Page {
	v := in.Results.Valid().String()
	p := &Page{Verdict: v, Expected: v == "invalid" && UnfencedFinding(in.Test.Fencing, in.Results.Workload)}
	p.Title = fmt.Sprintf("%s · %s %s", strings.ToUpper(p.VerdictText()), in.Test.Target, in.Results.Workload)
	return p
}

// TableSection is a table: a sentence above it, a header row and rows
// (plain text; escaped).
func TableSection(id, title, intro string, head []string, rows [][]string) Section {
	return section{ID: id, Title: title, tmpl: "table", data: tableData{Intro: intro, Head: head, Rows: rows}}
}

type tableData struct {
	Intro string
	Head  []string
	Rows  [][]string
}

// TextSection is paragraphs of plain text.
func TextSection(id, title string, paragraphs ...string) Section {
	return section{ID: id, Title: title, tmpl: "text", data: paragraphs}
}

// OperationsSections are a timeline of the history's operations (a lane per
// client, faults shaded) and their throughput and latency.
func OperationsSections(in *Input) []Section {
	events := in.AllEvents()
	ops, _ := history.Pair(events)
	m := genericModel(ops, events)
	last := max(m.Last, 1)
	return []section{
		{ID: "timeline", Title: "Timeline", tmpl: "generic-timeline", data: DrawTimeline(TimelineInput{ID: "tl-main", Model: m, Workers: in.Test.Concurrency, Servers: ServerNames(in.Test), From: 0, To: last, Tell: in.Tell, Records: RecordsOf(in)})},
		ChartsSection(samplesOf(ops, in.Test.Concurrency), m.Faults, last),
	}
}

// ResultsSection is what each checker found, as results.json has it (its
// "checkers": each one's name, verdict and message), in a table; the page
// links results.json for every figure. Results without checkers say so.
func ResultsSection(in *Input) Section {
	intro := "What each checker found; results.json (under Files) has every figure."
	var res struct {
		Checkers map[string]struct {
			Valid   checkers.Validity `json:"valid"`
			Message string            `json:"message"`
			Error   string            `json:"error"`
		} `json:"checkers"`
	}
	b, err := json.Marshal(in.Results)
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil || len(res.Checkers) == 0 {
		return TextSection("results", "Checkers", "The results name no checker; results.json (under Files) has what the check wrote.")
	}
	var rows [][]string
	for _, name := range sortedKeys(res.Checkers) {
		c := res.Checkers[name]
		found := c.Message
		if c.Error != "" {
			found = strings.TrimSpace(found + " " + c.Error)
		}
		rows = append(rows, []string{name, c.Valid.String(), orDash(found)})
	}
	return TableSection("results", "Checkers", intro, []string{"checker", "verdict", "what it found"}, rows)
}
