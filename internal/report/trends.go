package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/trends"
)

// TrendsFile is the trends page of a root of nights, at its root.
const TrendsFile = "trends.html"

// maxTrendCells bounds the cells the trends page shows (trends.json has
// them all).
const maxTrendCells = 5000

type trendsPage struct {
	Root        string
	S           trends.Summary
	Cells       []trends.Trend
	More        int
	Newest      string
	Unfenced    int
	Detecting   int
	Now         string
	Regressions map[trends.Key]string
}

// RenderTrends writes the trends page of a root of nights to w: the newest
// night's regressions, then per cell a strip of its verdicts night by
// night, its detection rate (unfenced cells: nights it lost updates, of
// the nights it ran), its median time to the first lost update and its
// median throughput, then the nights. root is shown as the title.
func RenderTrends(w io.Writer, root string, s trends.Summary) error {
	p := trendsPage{Root: root, S: s, Cells: s.Cells, Now: time.Now().UTC().Format("2006-01-02 15:04:05Z"), Regressions: map[trends.Key]string{}}
	if len(p.Cells) > maxTrendCells {
		p.Cells, p.More = p.Cells[:maxTrendCells], len(p.Cells)-maxTrendCells
	}
	if n := len(s.Nights); n > 0 {
		p.Newest = s.Nights[n-1].Dir
	}
	for _, c := range s.Cells {
		if c.Detected != nil && c.Key.Workload == "" { // unfenced lock-append cells
			p.Unfenced++
			if last := c.Strip[len(c.Strip)-1]; last.Lost > 0 {
				p.Detecting++
			}
		}
	}
	for _, r := range s.Regressions {
		p.Regressions[r.Key] = r.Kind
	}
	if err := trendsTmpl.Execute(w, p); err != nil {
		return fmt.Errorf("report: trends: %w", err)
	}
	return nil
}

// WriteTrends writes trends.html at the root of a root of nights, and, when
// asIndex, the same page as its index.html (a root of nights has no runs of
// its own for an index to list). Each file is replaced atomically.
func WriteTrends(root string, s trends.Summary, asIndex bool) error {
	var buf bytes.Buffer
	abs, _ := filepath.Abs(root)
	if err := RenderTrends(&buf, abs, s); err != nil {
		return err
	}
	names := []string{TrendsFile}
	if asIndex {
		names = append(names, IndexFile)
	}
	for _, name := range names {
		if err := trends.ReplaceFile(root, name, buf.Bytes()); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}

var trendsTmpl = template.Must(template.New("trends").Funcs(template.FuncMap{
	"secs": func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f s", *p)
	},
	"rate": func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f", *p)
	},
	"pct":   func(p *float64) string { return fmt.Sprintf("%.0f%%", 100**p) },
	"count": func(p *int) int { return *p },
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04")
	},
	"night": func(s trends.Summary, i int) string { return s.Nights[i].Dir },
	"mark": func(m trends.Mark) string {
		if m.Verdict == "" {
			return "absent"
		}
		return map[string]string{trends.Valid: "valid", trends.Invalid: "invalid", trends.Unknown: "unknown"}[m.Verdict] + " m"
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>fencecheck trends: {{.Root}}</title>
<style>` + css + `
td,th{white-space:nowrap}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.strip{display:flex;gap:2px}.strip a,.strip span{display:inline-block;width:16px;height:18px;border-radius:3px;background:#d0d5dd;text-decoration:none;color:#fff;font-size:11px;font-weight:700;text-align:center;line-height:18px}
.strip .valid{background:var(--good)}.strip .invalid{background:var(--bad)}.strip .unknown{background:var(--warn)}
.strip .m{background-color:#98a2b3}.strip .valid.m{background:var(--good)}.strip .invalid.m{background:var(--bad)}.strip .unknown.m{background:var(--warn)}
.strip .absent{background:#fff;border:1px dashed #d0d5dd}.strip .reg{outline:3px solid #111;outline-offset:-1px}
tr.reg td{background:#fff5f4}
ul.regs li{margin:4px 0;padding:4px 10px;border-left:4px solid var(--bad);background:#fff5f4;list-style:none}
ul.regs{padding:0}
</style></head><body>
<header class="top"><div class="in">
<h1>fencecheck trends</h1>
<p class="sub"><code>{{.Root}}</code></p>
<div class="cards">
<div class="card"><div class="l">nights</div><div class="v">{{len .S.Nights}}</div><div class="n">newest {{.Newest}}</div></div>
<div class="card"><div class="l">cells</div><div class="v">{{len .S.Cells}}</div></div>
<div class="card {{if .S.Regressions}}bad{{else}}good{{end}}"><div class="l">regressions (newest night)</div><div class="v" id="regression-count">{{len .S.Regressions}}</div></div>
<div class="card"><div class="l">unfenced cells detecting (newest night)</div><div class="v">{{.Detecting}} of {{.Unfenced}}</div></div>
</div></div></header>
<main>
<h2>Regressions on the newest night</h2>
{{if .S.Regressions}}<ul class="regs" id="regressions">
{{range .S.Regressions}}<li><b>{{.Key}}</b>: {{.Message}}; {{.WasDir}} → {{.NowDir}}{{with .Now.Run}} (<a href="{{$.Newest}}/{{.}}/report.html">report</a>){{end}}</li>
{{end}}</ul>
{{else}}<p id="regressions">None: no fenced cell that was valid is invalid, and every unfenced cell that lost updates still does.</p>{{end}}
<h2>Cells</h2>
<p class="muted">One mark per night, oldest first: green valid, red invalid, orange unknown, grey an error or not run, dashed the night did not have the cell; a black outline is a regression. Detection: of the nights an unfenced cell ran, those it lost updates in. Throughput: acknowledged operations per second of the clients' time.</p>
<table id="cells"><tr><th>target</th><th>resource</th><th>nemesis</th><th>fencing</th><th class="num">run</th><th>judged</th><th>nights</th><th class="num">detection</th><th class="num">median first lost</th><th class="num">median ops/s</th></tr>
{{range .Cells}}<tr{{if index $.Regressions .Key}} class="reg"{{end}} data-key="{{.Key}}">
<td>{{.Key.Target}}{{with .Key.Workload}} {{.}}{{end}}{{with .Key.Axes}} {{.}}{{end}}</td><td>{{.Key.Resource}}</td><td>{{.Key.Nemesis}}</td><td>{{.Key.Fencing}}</td><td class="num">{{.Key.Run}}</td>
<td>{{if .MustBeValid}}must be valid{{else}}reported{{end}}</td>
<td><div class="strip" data-strip="{{.StripText}}">{{range $i, $m := .Strip}}{{$title := printf "%s: %s, lost %d of %d%s" (night $.S $i) (or $m.Verdict "not in this night") $m.Lost $m.Acknowledged (or (and $m.Ran (printf " (ran %s)" $m.Ran)) "")}}{{if $m.Run}}<a class="{{mark $m}}{{if $m.Regressed}} reg{{end}}" href="{{$m.Run}}/report.html" title="{{$title}}">{{if $m.Regressed}}!{{end}}</a>{{else}}<span class="{{mark $m}}{{if $m.Regressed}} reg{{end}}" title="{{$title}}">{{if $m.Regressed}}!{{end}}</span>{{end}}{{end}}</div></td>
<td class="num">{{if .DetectionRate}}{{count .Detected}} of {{.Runs}} ({{pct .DetectionRate}}){{else}}-{{end}}</td>
<td class="num">{{secs .MedianFirstLostS}}</td><td class="num">{{rate .MedianOpsPerS}}</td>
</tr>
{{end}}</table>
{{if .More}}<p class="note">… and {{.More}} more cells: trends.json has them all.</p>{{end}}
<h2>Nights</h2>
<table id="nights"><tr><th>night</th><th>started (UTC)</th><th class="num">exit</th><th class="num">cells</th><th></th></tr>
{{range .S.Nights}}<tr><td><a href="{{.Dir}}/index.html">{{.Dir}}</a></td><td>{{stamp .Started}}</td><td class="num">{{.ExitCode}}</td><td class="num">{{.Cells}}</td><td>{{with .Err}}<span class="note">{{.}}</span>{{end}}</td></tr>
{{end}}</table>
<p class="muted">Written {{.Now}} by fencecheck trends; trends.json beside it holds the same figures.</p>
</main></body></html>
`))
