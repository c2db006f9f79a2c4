// Package report writes the HTML a person reads after a run: report.html in
// each run directory (the verdict and the configuration at a glance, the
// story of each lost update or fence rejection told from the history, a
// timeline of clients, servers and faults, throughput and latency, the
// checkers' findings), index.html over a results directory, and the
// read-only HTTP server behind `fencecheck serve`; and, for CI systems,
// junit.xml (WriteJUnit).
//
// Every page is self-contained: inline CSS and SVG, no script, nothing
// fetched, so it opens from disk. Every value from a history goes through
// html/template; no figure is assembled as raw markup.
//
// Each workload has a view, in its own folder (internal/clients/workloads/NAME/view,
// paired with the workload in package views), built from this package's
// blocks (NewPage, Card, the sections, DrawTimeline, ParseTemplates); a
// workload without a view gets the generic one (verdict, operations
// timeline, charts, checker results, faults, configuration). This package
// knows no workload's result.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/history"
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/rerun"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// Input is what a report is made of.
type Input struct {
	Test    store.TestInfo
	Results *store.Results
	// Events are the history's events, when held; see EachEvent.
	Events []history.Event
	// HistoryPath, when Events is nil, is the history file a view streams
	// (EachEvent), never holding it whole unless it asks (AllEvents).
	HistoryPath string
	// last is the history's last time, once a pass read it whole.
	last      int64
	lastKnown bool
	// release, when set, ends Render's soft memory limit of a streamed
	// history (StreamedMemoryLimit): AllEvents ends it before it holds
	// the whole history, which the limit was not made for.
	release func()
	// HistoryErr says why the history could not be read, if it could not;
	// the report then shows the results alone.
	HistoryErr string
	// Files are the run directory's files, linked from the report.
	Files []File
	// View is the workload's page (workloads.Workload's View); nil is
	// GenericView.
	View View
	// Dir is the run directory (absolute), which the commands that
	// reproduce an invalid run name; "": the report shows none.
	Dir string
	// Clocks are what the run's clock faults did to each process's clock,
	// read from their records (the clock chart; none: no chart).
	Clocks []ClockCourse
	// Tell says each fault's record in words, by the fault's own record
	// type (nemesis.Tell); nil, or a record it cannot tell (a run
	// recorded before typed records), shows the record as recorded,
	// name=value.
	Tell FaultTeller
}

// View makes a workload's page: its headline, cards and sections. Faults,
// configuration and files are added to every page.
type View func(in *Input) (*Page, error)

// File is a file of a run directory, by its path relative to it.
type File struct {
	Name string
	Size int64
	// Dir: a directory (a node's kept data, data/n1/), shown with the
	// size of its files and not linked: `fencecheck serve` lists no
	// directory.
	Dir bool
}

// HumanSize is the size for people: 12 KB, 3.4 MB.
func (f File) HumanSize() string {
	if f.Size < 0 {
		return ""
	}
	return humanSize(f.Size)
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Write renders the run's report.html from its history.jsonl and the given
// configuration and results, streaming the history (HistoryPath). A
// history that cannot be read still gives a report, of the results alone,
// that says so.
func Write(run *store.Run, test store.TestInfo, res *store.Results, view View) error {
	in := Input{Test: test, Results: res, Files: RunFiles(run.Dir, nil), View: view, Dir: run.Dir, HistoryPath: run.HistoryPath()}
	var buf bytes.Buffer
	if err := Render(&buf, in); err != nil {
		return err
	}
	return run.WriteFile(store.ReportFile, buf.Bytes())
}

// RunFiles lists the files a report links: the run's own files, its
// logs, and the nodes' data directories it kept (data/NODE/, not linked). sizes, if not nil, gives the size some of the run's own files will
// have once the outputs being written are in place (-1: there will be
// none), instead of what is on disk now.
func RunFiles(dir string, sizes map[string]int64) []File {
	var fs []File
	for _, n := range []string{store.TestFile, store.HistoryFile, store.HistoryGz, store.HistoryText, store.ResultsFile, store.LinFile} {
		if size, ok := sizes[n]; ok {
			if size >= 0 {
				fs = append(fs, File{Name: n, Size: size})
			}
			continue
		}
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && st.Mode().IsRegular() {
			fs = append(fs, File{Name: n, Size: st.Size()})
		}
	}
	logs, _ := os.ReadDir(filepath.Join(dir, store.LogsDir))
	for _, e := range logs {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			fs = append(fs, File{Name: store.LogsDir + "/" + e.Name(), Size: info.Size()})
		}
	}
	nodes, _ := os.ReadDir(filepath.Join(dir, store.DataDir))
	for _, e := range nodes {
		if e.IsDir() {
			name := store.DataDir + "/" + e.Name() + "/"
			fs = append(fs, File{Name: name, Size: treeSize(filepath.Join(dir, name)), Dir: true})
		}
	}
	return fs
}

// maxTreeEntries bounds the entries treeSize reads of one tree.
const maxTreeEntries = 100_000

// treeSize is the length of the regular files under dir, links not
// followed, read from at most maxTreeEntries entries: a kept data
// directory's size.
func treeSize(dir string) int64 {
	var size int64
	seen := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if seen++; err != nil || seen > maxTreeEntries {
			return filepath.SkipAll
		}
		if info, err := d.Info(); err == nil && d.Type().IsRegular() {
			size += info.Size()
		}
		return nil
	})
	return size
}

// FileSize returns the size of the named run file, -1 if it is not there.
func (in *Input) FileSize(name string) int64 {
	for _, f := range in.Files {
		if f.Name == name {
			return f.Size
		}
	}
	return -1
}

// section is one part of a report: a heading and a template with its data,
// from the page's templates or, when set is not nil, from a view's own.
type section struct {
	ID, Title string
	tmpl      string
	data      any
	set       *template.Template
}

// lead is a story in one line in the header.
type lead struct {
	Href, At, Text, Class string
}

// card is a key figure in the header.
type card struct {
	Label, Value, Note, Class string
}

// Page is a whole report: what a View returns.
type Page struct {
	Title   string
	Verdict string
	// Expected: the run is invalid and not judged (UnfencedFinding); the
	// badge says "invalid (expected)" in a neutral colour.
	Expected bool
	Headline string
	Sub      []string
	// Leads are the first stories in one line each, linked.
	Leads    []lead
	MoreLead int
	Config   []card
	Cards    []card
	Sections []section
	Notes    []string
}

// VerdictText is the verdict as the page's badge says it: "invalid
// (expected)" for an Expected run, the verdict otherwise.
func (p *Page) VerdictText() string {
	if p.Expected {
		return p.Verdict + " (expected)"
	}
	return p.Verdict
}

// Render writes the report of in to w. What it shows is bounded (see
// bound), and so is the page: past MaxReport bytes, a short page says why
// instead.
func Render(w io.Writer, in Input) error {
	if in.Results == nil {
		return fmt.Errorf("report: no results")
	}
	if in.streamed() {
		limit, gc := checkers.LowerMemoryLimit(StreamedMemoryLimit), tighterGC()
		in.release = func() { limit(); gc() }
		defer in.release()
	}
	in = bound(in)
	var buf bytes.Buffer
	err := renderBounded(&limitWriter{w: &buf, n: MaxReport}, in)
	if errors.Is(err, errTooLarge) {
		buf.Reset()
		err = renderTooLarge(&buf, in)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// errTooLarge: the page passed MaxReport.
var errTooLarge = fmt.Errorf("report: larger than %d MB", MaxReport>>20)

// limitWriter writes at most n bytes to w, and fails past them.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(b []byte) (int, error) {
	if len(b) > l.n {
		return 0, errTooLarge
	}
	l.n -= len(b)
	return l.w.Write(b)
}

// renderTooLarge writes the page of a report that would be too large: the
// verdict, the configuration and why, with the run's files.
func renderTooLarge(w io.Writer, in Input) error {
	p := verdictPage(&in)
	p.Headline = fmt.Sprintf("Verdict: %s. The full report would be larger than %d MB: the history holds unusually large or many values. results.json and the history have everything.", p.VerdictText(), MaxReport>>20)
	p.Config = configCards(in.Test)
	p.Cards = []card{{Label: "history events", Value: fmt.Sprint(in.Results.Events)}, {Label: "faults", Value: fmt.Sprint(len(in.Results.Faults))}}
	p.Sections = []section{
		{ID: "config", Title: "Configuration", tmpl: "config", data: configRows(in.Test)},
		{ID: "files", Title: "Files", tmpl: "files", data: in.Files},
	}
	return renderPage(w, p)
}

// renderBounded writes the report of in, bounded, to w.
func renderBounded(w io.Writer, in Input) error {
	v := in.View
	if v == nil {
		v = GenericView
	}
	p, err := v(&in)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	p.Sections = append(p.Sections, commonSections(&in)...)
	if in.HistoryErr != "" {
		// Cut here too: a streamed history's error is found by the view,
		// after bound.
		p.Notes = append(p.Notes, "The history could not be read, so this report shows the results alone: "+cut(in.HistoryErr, MaxText))
	}
	return renderPage(w, p)
}

// renderPage writes the page: its head, each section's template, its foot.
func renderPage(w io.Writer, p *Page) error {
	bw := &errWriter{w: w}
	if err := tmpl.ExecuteTemplate(bw, "head", p); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	for _, s := range p.Sections {
		if err := tmpl.ExecuteTemplate(bw, "section-open", s); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		set := tmpl
		if s.set != nil {
			set = s.set
		}
		if err := set.ExecuteTemplate(bw, s.tmpl, s.data); err != nil {
			return fmt.Errorf("report: section %s: %w", s.ID, err)
		}
		io.WriteString(bw, "</section>\n")
	}
	if err := tmpl.ExecuteTemplate(bw, "foot", p); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return bw.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

// configCards is the configuration at a glance.
func configCards(t store.TestInfo) []card {
	var cs []card
	add := func(label, value string) {
		if value != "" && value != "0" {
			cs = append(cs, card{Label: label, Value: value})
		}
	}
	target := t.Target
	if t.TargetVersion != "" {
		target += " " + t.TargetVersion
	}
	add("target", target)
	add("recipe", t.Recipe)
	if name, _, ok := strings.Cut(t.Client, " ("); ok {
		add("lock client", name)
	}
	add("workload", t.Workload)
	cs = append(cs, card{Label: "fencing", Value: orDash(t.Fencing), Class: "em"})
	add("nemesis", t.Nemesis)
	add("clients", fmt.Sprint(t.Concurrency))
	add("nodes", fmt.Sprint(t.Nodes))
	add("lease TTL", dstr(t.TTL))
	add("time limit", dstr(t.TimeLimit))
	if t.Seed != 0 {
		add("seed", fmt.Sprint(t.Seed))
	}
	if !t.Started.IsZero() {
		add("started", t.Started.UTC().Format("2006-01-02 15:04:05Z"))
	}
	return cs
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// commonSections are every report's last sections: reproduce (an invalid
// run's), liveness (when the run measured it), clocks (when it had clock
// faults), faults, configuration, files.
func commonSections(in *Input) []section {
	var ss []section
	if r := reproduceRows(in); r != nil {
		ss = append(ss, section{ID: "reproduce", Title: "Reproduce", tmpl: "reproduce", data: r})
	}
	if s, ok := livenessSection(in); ok {
		ss = append(ss, s)
	}
	if s, ok := clockSection(in); ok {
		ss = append(ss, s)
	}
	for _, r := range in.Results.Records {
		if sc, ok := r.(record.Sectioner); ok {
			id, title, lines := sc.Section()
			ss = append(ss, section{ID: id, Title: title, tmpl: "lines", data: lines})
		}
	}
	return append(ss,
		section{ID: "faults", Title: "Faults", tmpl: "faults", data: faultRows(in)},
		section{ID: "config", Title: "Configuration", tmpl: "config", data: configRows(in.Test)},
		section{ID: "files", Title: "Files", tmpl: "files", data: in.Files},
	)
}

// reproduceRows are the commands that repeat an invalid run: fencecheck
// rerun (configuration, seed and the recorded fault schedule) and, when
// test.json allows it, fencecheck run with the run's flags and seed (the
// faults drawn again from the seed). nil for a run that is not invalid or
// whose directory is not known.
func reproduceRows(in *Input) []card {
	if in.Dir == "" || in.Results.Valid() != checkers.Invalid {
		return nil
	}
	rows := []card{{Label: "rerun", Value: rerun.Command(in.Dir, in.Test),
		Note: "the same configuration, seed and recorded faults (the same faults, held as long, after the same quiet times; a holder fault on the next lock holder), 5 times: prints how many re-runs are invalid"}}
	if c := rerun.RunCommand(in.Test); c != "" {
		rows = append(rows, card{Label: "run", Value: c, Note: "the same configuration and seed; the faults are drawn from the seed again, at the times the run's own timing gives"})
	}
	return rows
}

type faultRow struct {
	Fault, Nodes, Start, Stop, Held, Params, Error string
}

// faultTable is the faults' table: the first MaxRows of Total, More not
// listed.
type faultTable struct {
	Rows        []faultRow
	More, Total int
}

// MaxRows bounds a page's tables and lists: past it, the rest is counted,
// not listed, and the page says where they all are. (A page has no script
// to page a table with; 500 rows of each keeps a 1M-operation report at
// some 20,000 elements, which a browser lays out in well under a second.)
const MaxRows = 500

// HeldFor is how long a healed fault was in effect, as the faults table,
// every story step and summary say it: its window, to 10 ms.
func HeldFor(f history.Fault) time.Duration {
	return time.Duration(f.Stop - f.Start).Round(10 * time.Millisecond)
}

// WithoutHold is v without what the fault was meant to hold (its Hold, or
// a run's recorded "hold" or "down" param), for a page that says how long
// it held (HeldFor): a second figure for one quantity would disagree with
// it whenever the fault was healed early or late.
func WithoutHold(v history.FaultValue) history.FaultValue {
	v.Hold = 0
	if v.Recorded != nil {
		v.Recorded = maps.Clone(v.Recorded)
		delete(v.Recorded, "hold")
		delete(v.Recorded, "down") // a kill's hold, as runs recorded it
	}
	return v
}

func faultRows(in *Input) faultTable {
	t := faultTable{Total: len(in.Results.Faults)}
	tiers := map[string]string{}
	for _, s := range in.Test.Servers {
		if s.Tier != "" {
			tiers[s.Name] = s.Tier
		}
	}
	for i, f := range in.Results.Faults {
		if i == MaxRows {
			t.More = len(in.Results.Faults) - MaxRows
			break
		}
		v := f.FaultValue
		r := faultRow{Fault: f.Fault, Nodes: nodesWithTiers(f.Nodes, tiers), Start: Secs(f.Start), Stop: "not recovered", Error: f.Error}
		if f.Stop >= 0 {
			r.Stop = Secs(f.Stop)
			// One figure for how long it held: its window, in the
			// column; the words leave out what it was meant to hold.
			r.Held = HeldFor(f).String()
			v = WithoutHold(v)
		}
		r.Params = DescribeParams(v.Shown())
		if w, ok := in.Tell.words(v, in.Test.Concurrency); ok {
			r.Params = w
		} else if h := f.Holder; h != nil {
			token := ""
			if h.Token != nil {
				token = strconv.FormatInt(*h.Token, 10)
			}
			r.Params = strings.TrimSpace("holder=" + h.Process.Client(in.Test.Concurrency) + " token=" + token + " " + r.Params)
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// nodesWithTiers names the nodes a fault hit, each with its tier when the
// target has more than one kind of server ("n1 (etcd), a2").
func nodesWithTiers(nodes []string, tiers map[string]string) string {
	named := make([]string, len(nodes))
	for i, n := range nodes {
		named[i] = n
		if tier := tiers[n]; tier != "" {
			named[i] += " (" + tier + ")"
		}
	}
	return strings.Join(named, ", ")
}

func configRows(t store.TestInfo) []card {
	var rows []card
	add := func(k, v string) {
		if v != "" {
			rows = append(rows, card{Label: k, Value: v})
		}
	}
	add("run", strings.TrimSpace(t.Name+" "+t.RunID.String()))
	if !t.Started.IsZero() {
		add("started", t.Started.UTC().Format(time.RFC3339Nano))
	}
	add("fencecheck", t.Fencecheck+ifSet(", revision ", t.FencecheckRevision))
	add("target version", t.TargetVersion)
	add("lock client", t.Client)
	add("max lease", t.MaxLease)
	// Every knob that is set, by its flag (spec.Knobs).
	for _, r := range t.Spec.Rows() {
		add("--"+r.Flag, r.Value)
	}
	if r := t.Rerun; r != nil {
		add("rerun of", fmt.Sprintf("%s (%s schedule: %s)", r.Of, r.Schedule, strings.Join(r.Faults, "; ")))
	}
	var srv []string
	for _, s := range t.Servers {
		srv = append(srv, s.Name+" "+s.Addr+ifSet(" ", s.Tier))
	}
	if len(t.Endpoints) > 0 {
		srv = append([]string{"not fencecheck's (--endpoints): it started none of them and acted on none; only client-side faults ran"}, srv...)
	}
	add("servers", strings.Join(srv, " · "))
	add("cluster ready in", t.ClusterReady)
	var imgs []string
	for _, k := range sortedKeys(t.Images) {
		s := k + ": " + t.Images[k]
		if id := t.ImageIDs[k]; id != "" {
			s += " (" + shortID(id) + ")"
		}
		imgs = append(imgs, s)
	}
	add("images", strings.Join(imgs, " · "))
	return rows
}

func ifSet(prefix, v string) string {
	if v == "" {
		return ""
	}
	return prefix + v
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// JSONBlock is a JSON document shown in a <pre>, or only its size when it
// is too large to be worth inlining.
type JSONBlock struct {
	Text string
	Size string
}

const maxInlineJSON = 256 << 10

// AsJSON is v as indented JSON, or only its size past maxInlineJSON.
func AsJSON(v any) JSONBlock {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return JSONBlock{Text: err.Error()}
	}
	if len(b) > maxInlineJSON {
		return JSONBlock{Size: humanSize(int64(len(b)))}
	}
	return JSONBlock{Text: string(b)}
}

// GenericView is the report of a workload that has no view of its own: the
// verdict, an operations timeline, the charts and the results as they are.
func GenericView(in *Input) (*Page, error) {
	res := in.Results
	p := NewPage(in, fmt.Sprintf("Verdict: %s. This workload (%q) has no report view of its own yet: below are its operations, its faults and what its checkers found.", res.Valid(), res.Workload))
	p.Cards = []card{{Label: "history events", Value: fmt.Sprint(res.Events)}, {Label: "faults", Value: fmt.Sprint(len(res.Faults))}, {Label: "checked in", Value: orDash(res.CheckTime)}}
	p.Sections = append(OperationsSections(in), ResultsSection(in))
	return p, nil
}

// genericModel makes a model of any workload's operations, so that the
// timeline can draw their spans.
func genericModel(ops []history.Op, events []history.Event) *OpModel {
	m := &OpModel{}
	m.Faults, _ = history.Faults(events)
	for _, e := range events {
		m.Last = max(m.Last, e.Time)
	}
	for _, o := range ops {
		if o.Process >= 1000000 { // the harness's own reads
			continue
		}
		m.Ops = append(m.Ops, &Op{Proc: o.Process, Invoke: o.Invoke.Time, End: o.End(), Type: o.Type(), Label: o.F,
			CriticalSection: NoCriticalSection, StaleFrom: -1, WriteIdx: -1})
	}
	return m
}

// ServerNames are the names of the run's servers, a timeline's server
// lanes.
func ServerNames(t store.TestInfo) []string {
	var s []string
	for _, n := range t.Servers {
		s = append(s, n.Name)
	}
	return s
}

// samplesOf returns the completed client operations for the charts, each
// named by its client (Process.Client of workers).
func samplesOf(ops []history.Op, workers int) []Sample {
	var out []Sample
	for _, o := range ops {
		if o.Complete == nil || o.Process >= 1000000 {
			continue
		}
		out = append(out, Sample{Invoke: o.Invoke.Time, End: o.Complete.Time, Type: o.Complete.Type, What: o.Process.Client(workers) + " " + o.F})
	}
	return out
}

type charts struct {
	Throughput, Latency Figure
}

// ChartsSection draws the throughput and the latency of samples, with the
// fault windows shaded, on a timeline's time axis from 0 to last.
func ChartsSection(samples []Sample, faults []history.Fault, last int64) Section {
	in := chartInput{samples: samples, Faults: faults, from: 0, to: last}
	return section{ID: "charts", Title: "Throughput and latency", tmpl: "charts", data: charts{Throughput: drawThroughput(in), Latency: drawLatency(in)}}
}

// dstr is a duration as test.json wrote it ("2s"), "" for none.
func dstr(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}
