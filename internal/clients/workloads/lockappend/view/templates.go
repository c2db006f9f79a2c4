package view

import "github.com/fencecheck/fencecheck/internal/report"

// tmpl holds the lock-append sections' templates, parsed with the page's
// ("figure", "secs"); the page's style (report's) has their classes.
var tmpl = report.ParseTemplates(sectionsSrc)

const sectionsSrc = `{{define "story"}}<article class="story {{.Kind}}" id="{{.ID}}">
<div class="kind">{{.KindLabel}}</div>
<h3>{{.Title}}</h3>
<p class="summary">{{.Summary}}</p>
<div class="actors">{{range .Actors}}<span><span class="chip">{{.Name}}</span>{{.Node}}, {{.TokenText}}{{with .Role}}: {{.}}{{end}}</span>{{end}}</div>
{{template "figure" .Fig}}
{{with .Zoom}}<div class="zoom-title">Close-up of the end, {{$.ZoomFrom}} to {{$.ZoomTo}}</div>{{template "figure" .}}{{end}}
{{with .Tokens}}<div class="zoom-title">Tokens over the story's window: the stale write below the highest token the resource had accepted</div>{{template "figure" .}}{{end}}
<table class="steps">{{range .Steps}}<tr class="{{.Tone}}"><td class="t">{{secs .At}}{{with .Wall}} <span class="wall">({{.}})</span>{{end}}</td><td class="w">{{.Who}}</td><td class="x">{{.Text}}</td></tr>{{end}}</table>
{{with .Fencing}}<div class="why"><b>Fencing:</b> {{.}}</div>{{end}}
</article>
{{end}}

{{define "story-lines"}}<table><tr><th>at</th><th>story</th><th>kind</th><th>lost</th></tr>
{{range .}}<tr id="{{.ID}}"><td>{{.At}}</td><td>{{.Title}}</td><td>{{.KindLabel}}</td><td>{{.Lost}}</td></tr>
{{end}}</table>
{{end}}

{{define "stories"}}
{{if .Lost}}<p>Each story below is built from the history: the phases the clients reported, the faults the nemesis recorded, the tokens and the revisions of the writes. Letters name the clients of one story; <b>A</b> is always the stale holder.</p>
{{range .Lost}}{{template "story" .}}{{end}}
{{with .LostMore}}<h3>{{len .}} more lost-update stories</h3>{{template "story-lines" .}}{{end}}{{end}}
{{if .Fenced}}<h3>The fence at work ({{.Fencing}} fencing)</h3>
<p>Stale writes the resource refused: without the fence, each would have replaced the list with an old one.</p>
{{range .Fenced}}{{template "story" .}}{{end}}
{{with .FencedMore}}<h3>{{len .}} more fence rejections</h3>{{template "story-lines" .}}{{end}}{{end}}
{{with .Truncated}}<p class="muted" id="stories-more">{{.}} more stories are not listed; results.json has every lost element, and history.txt every operation.</p>{{end}}
{{with .Quiet}}<p>{{.}}</p>{{end}}
{{end}}

{{define "legend"}}<div class="legend">
<span><svg viewBox="0 0 28 14"><rect class="belief" x="2" y="2" width="24" height="10" style="fill:var(--belief)"/></svg>believes it holds the lock (acquired → releasing)</span>
<span><svg viewBox="0 0 28 14"><rect x="2" y="2" width="24" height="10" style="fill:var(--stale)"/></svg>still believes, though a newer token was granted (stale)</span>
<span><svg viewBox="0 0 28 14"><line x1="2" y1="7" x2="26" y2="7" style="stroke:#98a2b3;stroke-width:1.6"/></svg>operation: invoke → completion</span>
<span><svg viewBox="0 0 28 14"><circle cx="14" cy="7" r="3.5" style="fill:#fff;stroke:#2e7d32;stroke-width:1.6"/></svg>write accepted</span>
<span><svg viewBox="0 0 28 14"><use href="#g-diamond" x="14" y="7" style="fill:#c62828"/></svg>stale write accepted: it lost updates</span>
<span><svg viewBox="0 0 28 14"><use href="#g-ring" x="14" y="7" style="fill:none;stroke:#c62828;stroke-width:2"/></svg>acknowledged element lost</span>
<span><svg viewBox="0 0 28 14"><use href="#g-cross" x="14" y="7" style="fill:none;stroke:#111;stroke-width:2.2"/></svg>write refused by the fence</span>
<span><svg viewBox="0 0 28 14"><use href="#g-q" x="14" y="7" style="fill:#fff;stroke:#ef6c00;stroke-width:1.6"/></svg>outcome unknown (info)</span>
{{template "fault-kinds"}}
<span><svg viewBox="0 0 28 14"><rect x="2" y="10" width="24" height="3" style="fill:#7c5cc4"/><use href="#g-lead" x="14" y="6" style="fill:#7c5cc4"/></svg>server lane: while it led, and where it became leader (hollow: none led)</span>
</div>{{end}}

{{define "agg-legend"}}<div class="legend">
<span><svg viewBox="0 0 28 14"><rect x="2" y="2" width="8" height="10" style="fill:var(--belief);fill-opacity:.25"/><rect x="10" y="2" width="8" height="10" style="fill:var(--belief);fill-opacity:.7"/><rect x="18" y="2" width="8" height="10" style="fill:var(--belief)"/></svg>share of the bin the client held the lock</span>
<span><svg viewBox="0 0 28 14"><rect x="2" y="10" width="24" height="3" style="fill:var(--stale)"/></svg>a stale holder still believed it held it</span>
<span><svg viewBox="0 0 28 14"><rect x="11" y="0" width="6" height="14" style="fill:#7f0000"/></svg>stale writes accepted that lost updates</span>
<span><svg viewBox="0 0 28 14"><rect x="11" y="0" width="6" height="14" style="fill:#c62828"/></svg>acknowledged elements lost</span>
<span><svg viewBox="0 0 28 14"><rect x="11" y="0" width="6" height="14" style="fill:#111"/></svg>writes refused by the fence</span>
<span><svg viewBox="0 0 28 14"><rect x="11" y="0" width="6" height="14" style="fill:#ef6c00"/></svg>outcome unknown (info)</span>
{{template "fault-kinds"}}
<span><svg viewBox="0 0 28 14"><rect x="2" y="10" width="24" height="3" style="fill:#7c5cc4"/><use href="#g-lead" x="14" y="6" style="fill:#7c5cc4"/></svg>server lane: while it led, and where it became leader (hollow: none led)</span>
</div>{{end}}

{{define "timeline"}}{{if .Aggregate}}{{template "agg-legend"}}
<p class="muted">{{.Ops}} operations are too many to draw one by one: each lane shows, per time bin, how much of it its client held the lock and where the writes that matter fell (hover for counts). The stories above draw their own windows in full.</p>{{else}}{{template "legend"}}{{end}}
{{template "figure" .Fig}}
<p class="muted">Hover over a bar or a mark for its details; a red mark links to its story.</p>
{{end}}

{{define "lost"}}{{if .Rows}}<table><tr><th>element</th><th>appended by</th><th>token</th><th>acknowledged at</th><th>erased by</th><th>the checker's finding</th><th>how</th></tr>
{{range .Rows}}<tr><td>{{.Element}}</td><td>{{.Client}}</td><td>{{.Token}}</td><td>{{.Acked}}</td><td>{{.Erased}}</td><td>{{.What}}</td><td>{{if .Story}}<a href="{{.Story}}">{{.Kind}}</a>{{end}}</td></tr>
{{end}}</table>{{if .More}}<p class="muted" id="lost-more">The first {{len .Rows}} of {{.Total}} lost elements; results.json lists every one, and history.txt has the operations that wrote them.</p>{{end}}
{{else}}<p>None: every acknowledged element is in the final read.</p>{{end}}
{{end}}

{{define "tokens"}}<p>{{.Message}}</p>{{if .Rows}}<table><tr><th>violation</th><th>first grant</th><th>later grant</th><th>faults around them</th></tr>
{{range .Rows}}<tr class="bad"><td>{{if eq .Kind "duplicate"}}token granted twice{{else}}later grant, lower token{{end}}</td><td>token {{.AToken}} to {{.AClient}} at {{.AGranted}}</td><td>token {{.BToken}} to {{.BClient}}, asked at {{.BAsked}}, granted at {{.BGranted}}</td><td>{{.Faults}}</td></tr>
{{end}}</table>{{if .More}}<p class="muted">The first {{len .Rows}} of {{.Total}} violations; results.json lists every one.</p>{{end}}
<p>Fencing relies on tokens that only grow: when the lock service hands out a token again, or a lower one, the resource cannot tell the holders apart. Whichever reaches it first raises the fence, and the other's writes are then refused although it holds the lock, or accepted although it no longer does.</p>{{end}}{{end}}
{{define "checkers"}}<table><tr><th>checker</th><th>verdict</th><th>finding</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td class="{{.Valid}}">{{.Valid}}</td><td>{{.Message}}{{with .Error}} <b>{{.}}</b>{{end}}</td></tr>
{{end}}</table>
{{with .Lin}}{{if .Present}}<p id="porcupine">Porcupine's visualization of the history: <a href="{{.Name}}">{{.Name}}</a> ({{.Size}}, {{.Ops}} operations in one partition: the append-list model has a single state, so it covers the whole history).{{if .Large}} <b>It is large: your browser may take a long time to open it.</b>{{end}}</p>{{end}}{{end}}
<details><summary>Every checker's result (JSON)</summary>{{with .JSON}}{{if .Text}}<pre>{{.Text}}</pre>{{else}}<p class="muted">{{.Size}}: too large to show here; see results.json.</p>{{end}}{{end}}</details>
{{end}}

{{define "resources"}}<table><tr><th>resource</th><th>fencing</th><th>verdict</th><th>lost</th><th>fence rejections</th></tr>
{{range .}}<tr><td>{{.Name}}</td><td>{{.Fencing}}</td><td class="{{.Valid}}">{{.Valid}}</td><td>{{.Lost}}</td><td>{{.Rejections}}</td></tr>{{end}}</table>{{end}}
{{define "locks"}}<p>Each lock protects lists of its own (--locks), and its operations are checked apart; the figures above add the locks up.</p>
<table><tr><th>lock</th><th>verdict</th><th>lost</th><th>fence rejections</th></tr>
{{range .}}<tr><td>{{.Name}}</td><td class="{{.Valid}}">{{.Valid}}</td><td>{{.Lost}}</td><td>{{.Rejections}}</td></tr>{{end}}</table>{{end}}
{{define "partial"}}{{if .Elements}}<p>A stale holder's write refused by one resource and acknowledged by another leaves the resources disagreeing: every write path must check the token.</p>
<table><tr><th>element</th><th>client</th><th>token</th><th>refused by</th><th>acknowledged by</th></tr>
{{range .Elements}}<tr><td>{{.Element}}</td><td>{{.Client}}</td><td>{{.Token}}</td><td>{{range $i, $r := .RefusedBy}}{{if $i}}, {{end}}{{$r}}{{end}}</td><td>{{range $i, $r := .AcceptedBy}}{{if $i}}, {{end}}{{$r}}{{end}}</td></tr>{{end}}</table>
{{else}}<p class="muted">No partial update: every critical section's writes ended alike at every resource.</p>{{end}}{{end}}
{{define "audit"}}<p>The audit log checks no token: before its write, every holder appended an entry naming itself, its token and the element. It records {{.Entries}} writes; {{.RefusedButLogged}} of them were refused by fencing and never happened at the resource.</p>
{{if .Elements}}<table><tr><th>element</th><th>client</th><th>token</th><th>refused by</th></tr>
{{range .Elements}}<tr><td>{{.Element}}</td><td>{{.Client}}</td><td>{{.Token}}</td><td>{{if .RefusedBy}}{{range $i, $r := .RefusedBy}}{{if $i}}, {{end}}{{$r}}{{end}}{{else}}the resource{{end}}</td></tr>{{end}}</table>{{end}}{{end}}
`
