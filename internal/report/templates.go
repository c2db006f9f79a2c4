package report

import (
	"html/template"

	"github.com/fencecheck/fencecheck/internal/base/record"
)

// css is every page's style, inline.
const css = `
:root{--bad:#c62828;--good:#2e7d32;--warn:#ef6c00;--ink:#1d2330;--muted:#667085;--line:#e4e7ec;--bg:#f7f8fa;--belief:#3b6fd4;--stale:#e0453a}
*{box-sizing:border-box}
body{font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);margin:0;background:#fff}
main{max-width:1180px;margin:0 auto;padding:0 20px 40px}
header.top{background:var(--bg);border-bottom:1px solid var(--line);padding:18px 0 14px}
header.top .in{max-width:1180px;margin:0 auto;padding:0 20px}
h1{font-size:22px;margin:0 0 6px;display:flex;align-items:center;gap:12px;flex-wrap:wrap}
h2{font-size:18px;margin:34px 0 10px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:15px;margin:0 0 6px}
.verdict{display:inline-block;padding:3px 12px;border-radius:5px;color:#fff;font-weight:700;letter-spacing:.04em;text-transform:uppercase;font-size:16px}
.verdict.valid{background:var(--good)}.verdict.invalid{background:var(--bad)}.verdict.unknown{background:var(--warn)}.verdict.expected{background:#667085}
.headline{font-size:17px;font-weight:600;margin:6px 0 2px}
.sub{margin:2px 0;color:#344054}
ul.leads{list-style:none;padding:0;margin:8px 0 0}ul.leads li{margin:2px 0;padding-left:12px;border-left:3px solid var(--bad)}ul.leads li.good{border-left-color:var(--good)}
ul.leads a{color:var(--ink);text-decoration:none}ul.leads a:hover{text-decoration:underline}ul.leads .at{color:var(--muted);font-variant-numeric:tabular-nums;display:inline-block;min-width:52px}
.config{display:flex;flex-wrap:wrap;gap:4px 14px;margin:10px 0 0;color:var(--muted);font-size:13px}
.config b{color:var(--ink);font-weight:600}.config .em b{background:#fff3c4;padding:0 4px;border-radius:3px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0 0}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px 12px;min-width:120px}
.card .l{font-size:12px;color:var(--muted)}.card .v{font-size:19px;font-weight:700}.card .n{font-size:11.5px;color:var(--muted)}
.card.bad{border-color:#f3b4ae;background:#fff5f4}.card.bad .v{color:var(--bad)}
.card.good{border-color:#b7dfb9;background:#f4fbf4}.card.good .v{color:var(--good)}
.card.warn .v{color:var(--warn)}
nav.toc{margin:12px 0 0;font-size:13px}nav.toc a{margin-right:14px;color:#2456b3;text-decoration:none}
.note{color:var(--warn)}
p.note{background:#fff8e6;border:1px solid #f5d88f;padding:6px 10px;border-radius:6px;color:#6b4a00}
.story{border:1px solid var(--line);border-left:5px solid var(--bad);border-radius:8px;padding:12px 14px;margin:14px 0;background:#fff}
.story.fenced{border-left-color:var(--good)}
.story .kind{font-size:11.5px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted)}
.story .summary{margin:4px 0 8px}
.actors{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12.5px;color:#344054;margin:4px 0 6px}
.chip{display:inline-block;min-width:18px;height:18px;line-height:18px;text-align:center;border-radius:9px;background:#344054;color:#fff;font-weight:700;font-size:11.5px;margin-right:4px;padding:0 4px}
table{border-collapse:collapse;width:100%;margin:6px 0}
td,th{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{font-size:12px;color:var(--muted);font-weight:600;background:var(--bg)}
table.steps td{border-bottom:1px solid #f0f1f4;padding:3px 8px}
table.steps td.t{white-space:nowrap;font-variant-numeric:tabular-nums;color:var(--muted);width:64px;text-align:right}
table.steps td.t .wall{display:block;font-size:11px}
table.steps td.w{white-space:nowrap;font-weight:700;width:70px}
tr.fault td{background:#fff7e0}tr.bad td.x{color:#a61b1b;font-weight:600}tr.good td.x{color:#1b6b20;font-weight:600}
tr.result td{background:#fdecea;font-weight:700;color:#8d1a12}
.fenced tr.result td,tr.good.result td{background:#eaf6ea;color:#1b5e20}
.why{background:#f2f6ff;border:1px solid #cfdcf7;border-radius:6px;padding:8px 12px;margin:8px 0 4px}
.why b{color:#2456b3}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12.5px;color:#344054;margin:4px 0 8px}
.legend svg{width:28px;height:14px;vertical-align:middle}
td.valid{color:var(--good);font-weight:700}td.invalid{color:var(--bad);font-weight:700}td.unknown{color:var(--warn);font-weight:700}
pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;background:var(--bg);padding:10px;overflow:auto;max-height:32em;border-radius:6px}
code{font:12.5px ui-monospace,Menlo,Consolas,monospace}
.muted{color:var(--muted)}
a{color:#2456b3}
.story:target{box-shadow:0 0 0 3px #ffd54f}
svg.fig{width:100%;height:auto;display:block;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
.fig .lane{fill:#fff}.fig .lane.odd{fill:#fafbfc}.fig .lane.server,.fig .lane.node{fill:#f4f5f8}
.fig .lane-label{font-size:11.5px;fill:#344054;font-weight:600}
.fig .grid{stroke:#eceef2;stroke-width:1}.fig .axis{stroke:#98a2b3}
.fig .tick{font-size:10.5px;fill:var(--muted)}
.fig .band-label{font-size:10.5px;font-weight:600}
.fig .fault-label{font-size:10px;fill:#fff;font-weight:600}
.fig .span{stroke:#98a2b3;stroke-width:1.4}.fig .span.fail{stroke:#c0c5cf;stroke-dasharray:3 2}.fig .span.info,.fig .span.late{stroke:var(--warn);stroke-dasharray:4 2}
.fig .belief{fill:var(--belief)}.fig .belief.stale{fill:var(--stale);fill-opacity:.85}
.fig .belief-label{font-size:10px;fill:#fff;font-weight:700;pointer-events:none;paint-order:stroke;stroke:var(--belief);stroke-width:2.5px;stroke-linejoin:round}.fig .belief-label.out{fill:var(--ink);stroke:#fff}
.fig .w-ok{fill:#fff;stroke:var(--good);stroke-width:1.6}
.fig .w-stale{fill:var(--bad);stroke:#fff;stroke-width:1}
.fig .w-fenced{fill:none;stroke:#111;stroke-width:2.2}
.fig .w-unknown{fill:#fff;stroke:var(--warn);stroke-width:1.6;stroke-dasharray:2 1.5}
.fig .lost{fill:none;stroke:var(--bad);stroke-width:2}
.fig .erase{fill:none;stroke:var(--bad);stroke-width:1.6;stroke-dasharray:5 3}
.fig .dim{opacity:.28}
.fig .agg{fill:var(--belief)}.fig .agg.l1{fill-opacity:.25}.fig .agg.l2{fill-opacity:.45}.fig .agg.l3{fill-opacity:.7}.fig .agg.l4{fill-opacity:1}
.fig .agg-stale{fill:var(--stale)}
.fig .agg-done.ok{fill:#98a2b3}.fig .agg-done.fail{fill:#d6dae1}
.fig .lost-bin{fill:var(--bad)}.fig .w-stale-bin{fill:#7f0000}.fig .w-fenced-bin{fill:#111}.fig .unknown-bin{fill:var(--warn)}
.fig .note{font-size:10.5px;fill:var(--muted)}
.fig .bar.ok{fill:#66bb6a}.fig .bar.fail{fill:#b0b7c3}.fig .bar.info{fill:#ffa726}
.fig .pt.ok{fill:#43a047;fill-opacity:.8}.fig .pt.fail{fill:#8892a6;fill-opacity:.8}.fig .pt.info{fill:var(--warn)}
.fig .q{fill:none;stroke-width:1.6}.fig .q.p50{stroke:#43a047}.fig .q.p99{stroke:var(--warn)}.fig .q.pmax{stroke:var(--bad);stroke-dasharray:3 2}
/* A figure scales to the page: where the page is narrow its text is
   drawn larger, in the figure's units, so that it stays about 10px or
   more on the screen (at 820px wide, inside a story: 1100 units drawn
   746px wide). */
@media (max-width:1180px){svg.fig text{font-size:11.5px!important}}
@media (max-width:1000px){svg.fig text{font-size:13px!important}}
@media (max-width:880px){svg.fig text{font-size:15px!important}}
.zoom-title{font-size:12px;color:var(--muted);margin:6px 0 0}
.chart-title{font-size:13px;font-weight:600;margin:10px 0 0}
`

// glyphs are the marks' shapes, defined once and used by every figure.
const glyphs = `<svg width="0" height="0" style="position:absolute" aria-hidden="true"><defs>
<path id="g-cross" d="M-4 -4L4 4M-4 4L4 -4"/>
<path id="g-diamond" d="M0 -6L6 0L0 6L-6 0Z"/>
<circle id="g-ring" r="7"/>
<rect id="g-q" x="-3.5" y="-3.5" width="7" height="7" transform="rotate(45)"/>
<path id="g-raise" d="M0 -4.5L4.5 3.5H-4.5Z"/>
<path id="g-lead" d="M-5 3L-5 -3L-2.5 0L0 -4L2.5 0L5 -3L5 3Z"/>
</defs></svg>`

const pageSrc = `{{define "head"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>fencecheck {{.Title}}</title>
<style>` + css + chartsCSS + `{{faultKindsCSS}}{{recordsCSS}}</style></head><body>
` + glyphs + `
<header class="top"><div class="in">
<h1><span class="verdict {{.Verdict}}{{if .Expected}} expected" title="not judged: an unfenced run's lost updates show what fencing is for{{end}}" id="verdict">{{.VerdictText}}</span> <span>fencecheck report</span></h1>
<p class="headline" id="headline">{{.Headline}}</p>
{{range .Sub}}<p class="sub">{{.}}</p>{{end}}
{{if .Leads}}<ul class="leads" id="leads">{{range .Leads}}<li class="{{.Class}}"><span class="at">{{.At}}</span> <a href="{{.Href}}">{{.Text}}</a></li>{{end}}{{with .MoreLead}}<li class="muted">and {{.}} more below</li>{{end}}</ul>{{end}}
<div class="config" id="configuration">{{range .Config}}<span class="{{.Class}}">{{.Label}} <b>{{.Value}}</b></span>{{end}}</div>
<div class="cards">{{range .Cards}}<div class="card {{.Class}}"><div class="l">{{.Label}}</div><div class="v">{{.Value}}</div>{{with .Note}}<div class="n">{{.}}</div>{{end}}</div>{{end}}</div>
<nav class="toc">{{range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}</nav>
</div></header>
<main>
{{range .Notes}}<p class="note">{{.}}</p>{{end}}
{{end}}

{{define "section-open"}}<section id="{{.ID}}"><h2>{{.Title}}</h2>
{{end}}

{{define "foot"}}<p class="muted">Written by fencecheck. Self-contained: this page fetches nothing.</p>
</main></body></html>
{{end}}

{{define "generic-timeline"}}<p class="muted">One lane per client: each operation from invocation to completion (grey ok, dashed fail, orange info); fault windows shaded by kind, with a strip on the node each hit. On the server lanes, where the servers elect a leader: a purple bar while a node led, a crown where a node became leader, a hollow crown where none led.</p>
<div class="legend">{{template "fault-kinds"}}</div>
{{template "figure" .}}{{end}}

{{define "charts"}}<p class="muted">Drawn on the timeline's time axis, so that each fault window (shaded) lines up with its effect. Latency is an operation's time from invocation to completion, waiting for the lock included.</p>
<div class="chart-title">Throughput: completed operations per second (green ok, grey fail, orange info)</div>
{{template "figure" .Throughput}}
<div class="chart-title">Latency</div>
{{template "figure" .Latency}}
{{end}}

{{define "table"}}{{if .Intro}}<p>{{.Intro}}</p>{{end}}<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>{{end}}
{{define "text"}}{{range .}}<p>{{.}}</p>{{end}}{{end}}
{{define "json"}}{{if .Text}}<pre>{{.Text}}</pre>{{else}}<p class="muted">{{.Size}}: too large to show here; see results.json.</p>{{end}}{{end}}

{{define "faults"}}{{if .Rows}}<table><tr><th>fault</th><th>nodes</th><th>start</th><th>stop</th><th>held</th><th>parameters</th></tr>
{{range .Rows}}<tr><td>{{.Fault}}</td><td>{{.Nodes}}</td><td>{{.Start}}</td><td>{{.Stop}}</td><td>{{.Held}}</td><td>{{.Params}}{{with .Error}} <b>recovery failed: {{.}}</b>{{end}}</td></tr>
{{end}}</table>{{if .More}}<p class="muted" id="faults-more">The first {{len .Rows}} of {{.Total}} faults; results.json lists every one, and history.txt has each among the operations.</p>{{end}}
{{else}}<p>No fault was injected.</p>{{end}}
{{end}}

{{define "reproduce"}}<table>{{range .}}<tr><th>{{.Label}}</th><td><code>{{.Value}}</code><br><span class="muted">{{.Note}}</span></td></tr>{{end}}</table>{{end}}
{{define "config"}}<table>{{range .}}<tr><th>{{.Label}}</th><td>{{.Value}}</td></tr>{{end}}</table>{{end}}

{{define "lines"}}<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{define "files"}}<ul>{{range .}}<li>{{if .Dir}}{{.Name}} <span class="muted">{{.HumanSize}} in files</span>{{else if ge .Size 0}}<a href="{{.Name}}">{{.Name}}</a> <span class="muted">{{.HumanSize}}</span>{{else}}{{.Name}}{{end}}</li>{{end}}</ul>{{end}}
`

// recordsCSS is the style of the records' marks (their kinds' style rows),
// after the charts'.
func recordsCSS() template.CSS { return template.CSS(record.CSS()) }

// tmpl holds the templates every page uses: the page's head and foot, the
// figures and the shared sections.
var tmpl = baseTemplates()

func baseTemplates() *template.Template {
	t := template.Must(template.Must(template.New("report").Funcs(template.FuncMap{"secs": Secs, "recordsCSS": recordsCSS, "faultKinds": func() any { return faultKindStyle }, "faultKindsCSS": faultKindsCSS}).Parse(pageSrc)).Parse(figureSrc))
	return template.Must(t.Parse(chartsSrc))
}

// Templates are a view's own section templates, parsed with those every
// page has ("figure", the function "secs"), so that a workload's view keeps
// its templates in its own folder.
type Templates struct{ set *template.Template }

// ParseTemplates parses src, a view's {{define}}s, beside the page's
// templates; it panics when src does not parse (a view parses its
// templates once, when its package is initialized).
func ParseTemplates(src string) *Templates {
	return &Templates{set: template.Must(baseTemplates().Parse(src))}
}

// Section is a section drawn by the view's template name with data.
func (t *Templates) Section(id, title, name string, data any) Section {
	return section{ID: id, Title: title, tmpl: name, data: data, set: t.set}
}
