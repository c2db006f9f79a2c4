package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"time"

	"github.com/fencecheck/fencecheck/checkers"
)

// WriteReport writes the run's report.html: a self-contained page (inline
// style, no script, nothing fetched) with the verdict, the configuration,
// every checker's result, the lost updates and who overwrote them, the
// faults, and a link to linearizability.html when there is one. Every value
// is HTML-escaped by html/template.
func WriteReport(run *Run, test TestInfo, res *Results) error {
	if res.LockAppend == nil {
		return fmt.Errorf("store: report: no lock-append result (workload %q)", res.Workload)
	}
	checkersJSON, err := json.MarshalIndent(res.LockAppend.Checkers, "", "  ")
	if err != nil {
		return err
	}
	_, linErr := os.Stat(run.Path(LinFile))
	data := reportData{
		Test: test, Res: res, LA: res.LockAppend, Verdict: res.Valid().String(),
		CheckersJSON: string(checkersJSON),
		HasLin:       linErr == nil,
		LinFile:      LinFile,
	}
	var buf bytes.Buffer
	if err := reportTmpl.Execute(&buf, data); err != nil {
		return fmt.Errorf("store: report: %w", err)
	}
	return run.WriteFile(ReportFile, buf.Bytes())
}

type reportData struct {
	Test         TestInfo
	Res          *Results
	LA           *checkers.LockAppendResult
	Verdict      string
	CheckersJSON string
	HasLin       bool
	LinFile      string
}

func seconds(ns int64) string {
	if ns < 0 {
		return "never"
	}
	return fmt.Sprintf("%.3fs", time.Duration(ns).Seconds())
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"seconds": seconds,
	"secondsp": func(p *int64) string {
		if p == nil {
			return "-"
		}
		return seconds(*p)
	},
	"validity": func(v checkers.Validity) string { return v.String() },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>fencecheck {{.Verdict}}: {{.Test.Target}} {{.Test.Workload}} fencing={{.Test.Fencing}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
.verdict{display:inline-block;padding:.15em .6em;border-radius:4px;color:#fff;font-weight:bold}
.valid{background:#2e7d32}.invalid{background:#c62828}.unknown{background:#ef6c00}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f5f5f5} code,pre{font:12px/1.4 ui-monospace,monospace} pre{background:#f7f7f7;padding:.8em;overflow:auto;max-height:40em}
.muted{color:#777}
</style></head><body>
<h1>fencecheck: <span class="verdict {{.Verdict}}" id="verdict">{{.Verdict}}</span></h1>
<p>{{.Test.Target}} {{.Test.TargetVersion}} · workload {{.Test.Workload}} · fencing <b>{{.Test.Fencing}}</b> · nemesis {{.Test.Nemesis}} ·
{{.Test.Concurrency}} clients · {{.Test.Nodes}} nodes · TTL {{.Test.TTL}} · {{.Test.TimeLimit}} · seed {{.Test.Seed}}</p>
{{with .Res}}
<table>
<tr><th>operations</th><td>{{$.LA.Checkers.Stats.Ok}} ok, {{$.LA.Checkers.Stats.Fail}} fail, {{$.LA.Checkers.Stats.Info}} info</td></tr>
<tr><th>lost updates</th><td>{{$.LA.LostUpdates.Lost}} of {{$.LA.LostUpdates.Acknowledged}} acknowledged ({{printf "%.1f" $.LA.Checkers.LostUpdates.Percent}}%)</td></tr>
<tr><th>first lost update</th><td>{{secondsp .FirstLostUpdateNS}}</td></tr>
<tr><th>fence rejections</th><td>{{$.LA.FenceRejections}}</td></tr>
<tr><th>overlaps</th><td>{{$.LA.Overlaps}} windows in which two clients believed they held the lock</td></tr>
<tr><th>faults</th><td>{{len .Faults}}</td></tr>
<tr><th>run</th><td>{{.Events}} history events · checked in {{.CheckTime}}{{if .Elapsed}} · wall time {{.Elapsed}}{{end}}{{if .Interrupted}} · <b>interrupted</b>{{end}}</td></tr>
{{if .Note}}<tr><th>note</th><td>{{.Note}}</td></tr>{{end}}
{{if $.LA.Error}}<tr><th>error</th><td>{{$.LA.Error}}</td></tr>{{end}}
</table>

<h2>Checkers</h2>
<table><tr><th>checker</th><th>verdict</th><th>finding</th></tr>
<tr><td>linearizable</td><td class="{{validity $.LA.Checkers.Linearizable.Valid}}">{{validity $.LA.Checkers.Linearizable.Valid}}</td><td>{{$.LA.Checkers.Linearizable.Message}} {{$.LA.Checkers.Linearizable.Error}}</td></tr>
<tr><td>lost-updates</td><td>{{validity $.LA.Checkers.LostUpdates.Valid}}</td><td>{{$.LA.Checkers.LostUpdates.Message}} {{$.LA.Checkers.LostUpdates.Error}}</td></tr>
<tr><td>token-monotonic</td><td>{{validity $.LA.Checkers.TokenMonotonic.Valid}}</td><td>{{$.LA.Checkers.TokenMonotonic.Message}} {{$.LA.Checkers.TokenMonotonic.Error}}</td></tr>
<tr><td>overlap</td><td>{{validity $.LA.Checkers.Overlap.Valid}}</td><td>{{$.LA.Checkers.Overlap.Message}} {{$.LA.Checkers.Overlap.Error}}</td></tr>
<tr><td>stats</td><td>{{validity $.LA.Checkers.Stats.Valid}}</td><td>{{$.LA.Checkers.Stats.Message}} {{$.LA.Checkers.Stats.Error}}</td></tr>
</table>
{{end}}
{{if .HasLin}}<p>The history is not linearizable: <a href="{{.LinFile}}">Porcupine's visualization</a> shows the longest linearizable prefixes.</p>{{end}}

<h2 id="lost">Lost updates</h2>
{{with .LA.LostUpdates.Elements}}
<table><tr><th>element</th><th>appended by</th><th>token</th><th>acknowledged at</th><th>overwritten by</th></tr>
{{range .}}<tr><td>{{.Element}}</td><td>process {{.Process}}</td><td>{{.Token}}</td><td>{{seconds .Acknowledged}}</td>
<td>{{with .OverwrittenBy}}{{if .Known}}element {{.Element}} of process {{.Process}}, token {{.Token}} ({{.Type}}{{if .Late}}, late {{.Late}}{{end}}){{if .Stale}} — <b>a stale holder</b>: its token is lower{{end}}{{else}}element {{.Element}} (no append of this history){{end}}{{else}}<span class="muted">unknown</span>{{end}}</td></tr>
{{end}}</table>
{{else}}<p>None: every acknowledged element is in the final read.</p>{{end}}

<h2>Faults</h2>
{{with .Res.Faults}}<table><tr><th>fault</th><th>nodes</th><th>start</th><th>stop</th><th>parameters</th></tr>
{{range .}}<tr><td>{{.Fault}}</td><td>{{range .Nodes}}{{.}} {{end}}</td><td>{{seconds .Start}}</td><td>{{seconds .Stop}}</td><td>{{range $k, $v := .Params}}{{$k}}={{$v}} {{end}}{{if .Error}}<b>recovery failed: {{.Error}}</b>{{end}}</td></tr>
{{end}}</table>{{else}}<p>No fault was injected.</p>{{end}}

<h2>Configuration</h2>
<table>
<tr><th>run</th><td>{{.Test.Name}} · {{.Test.RunID}} · started {{.Test.Started}}</td></tr>
<tr><th>fencecheck</th><td>{{.Test.Fencecheck}}</td></tr>
<tr><th>lease</th><td>TTL {{.Test.TTL}} · margin {{.Test.Margin}} · work {{.Test.Work}} · acquire timeout {{.Test.AcquireTimeout}} · op timeout {{.Test.OpTimeout}}</td></tr>
<tr><th>nemesis</th><td>{{.Test.Nemesis}} every {{.Test.NemesisInterval}}</td></tr>
<tr><th>servers</th><td>{{range .Test.Servers}}{{.Name}} {{.Addr}}<br>{{end}}cluster ready in {{.Test.ClusterReady}}</td></tr>
<tr><th>images</th><td>{{range $k, $v := .Test.Images}}{{$k}}: {{$v}}<br>{{end}}</td></tr>
</table>
<p class="muted">Files: test.json, history.jsonl, results.json, logs/.</p>

<h2>Checker details</h2>
<pre>{{.CheckersJSON}}</pre>
</body></html>
`))
