package report

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/history"
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
	v := in.Results.Valid().String()
	return &Page{
		Title:    fmt.Sprintf("%s · %s %s", strings.ToUpper(v), in.Test.Target, in.Results.Workload),
		Verdict:  v,
		Headline: headline,
		Config:   configCards(in.Test),
	}
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
	ops, _ := history.Pair(in.Events)
	m := genericModel(ops, in.Events)
	last := max(m.Last, 1)
	return []section{
		{ID: "timeline", Title: "Timeline", tmpl: "generic-timeline", data: DrawTimeline(TimelineInput{ID: "tl-main", Model: m, Workers: in.Test.Concurrency, Servers: ServerNames(in.Test), From: 0, To: last, Tell: in.Tell, Records: RecordsOf(in)})},
		ChartsSection(samplesOf(ops, in.Test.Concurrency), m.Faults, last),
	}
}

// ResultsSection is the results as results.json has them.
func ResultsSection(in *Input) Section {
	return section{ID: "results", Title: "Results", tmpl: "json", data: AsJSON(in.Results)}
}
