// Package kept is the record of what a run kept of its nodes' data
// directories (--keep-data), results.json's "kept_data": made before
// teardown, carried by check, printed at the end of the run and shown in
// the report's "Data kept" section.
package kept

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// Key is the record's key in results.json.
const Key = "kept_data"

// Kind is the record's line of the table: carried by check (the copy was
// made before teardown; the nodes are gone).
var Kind = record.Kind{Key: Key, Decode: decode, Carried: true}

// Data is what a run kept of its nodes' data directories (--keep-data),
// each node's under store.DataDir/NODE of its directory.
type Data struct {
	Mode  string `json:"mode"`  // --keep-data that kept it: auto or always
	Limit uint64 `json:"limit"` // --keep-data-limit: the most bytes stored in all
	// Nodes are the nodes whose data directory was copied (servers, then
	// resources), copied at once and sharing the limit.
	Nodes []Node `json:"nodes,omitempty"`
	// Note says whose data was not kept, and why (attached servers).
	Note string `json:"note,omitempty"`
	Took string `json:"took"`
}

// Node is one node's data directory, copied.
type Node struct {
	Node string `json:"node"` // its name: its copy is store.DataDir/Node
	From string `json:"from"` // the directory in the node
	runtime.Copied
	// Error is why the copy stopped before the directory's end (its
	// deadline, the Engine): what it copied before stays.
	Error string `json:"error,omitempty"`
}

// Lines describe k for a reader, one line each: why and how much, a line
// per node (where its copy is, from where, how much), then what was left
// out for the limit, what was refused, and the note.
//
// The names come from the node (an image's files, the server's own) or a
// stored results.json: each is filtered and cut (safetext) before a
// terminal or a report shows it.
func (k *Data) Lines() []string {
	name, msg := safetext.Name, safetext.Message
	why := ""
	if k.Mode == "auto" {
		why = " (the run is invalid)"
	}
	ls := []string{fmt.Sprintf("--keep-data %s%s: %d nodes copied in %s before teardown, at most %s stored", k.Mode, why, len(k.Nodes), name(k.Took), checkers.FormatBytes(k.Limit))}
	var leftOut []string
	var refused []string
	outCount, outSize := 0, int64(0)
	for _, n := range k.Nodes {
		l := fmt.Sprintf("%s/%s from %s:%s: %s, %s", store.DataDir, name(n.Node), name(n.Node), name(n.From), files(n.Files), checkers.FormatBytes(uint64(n.Size)))
		if n.Stored != n.Size {
			l += fmt.Sprintf(" (%s stored: zeros left as holes)", checkers.FormatBytes(uint64(n.Stored)))
		}
		if n.Error != "" {
			l += "; stopped: " + msg(n.Error)
		}
		ls = append(ls, l)
		for _, s := range n.LeftOut {
			why := ""
			if s.Why != "limit" {
				why = ", " + name(s.Why) // more entries than a copy makes
			}
			leftOut = append(leftOut, fmt.Sprintf("%s:%s (%s%s)", name(n.Node), name(s.Path), checkers.FormatBytes(uint64(s.Size)), why))
		}
		outCount += n.LeftOutCount
		outSize += n.LeftOutSize
		for _, s := range n.Refused {
			refused = append(refused, fmt.Sprintf("%s:%s (%s)", name(n.Node), name(s.Path), name(s.Why)))
		}
		if more := n.RefusedCount - len(n.Refused); more > 0 {
			refused = append(refused, fmt.Sprintf("%d more of %s", more, name(n.Node)))
		}
	}
	if outCount > 0 {
		l := fmt.Sprintf("left out past the %s limit (--keep-data-limit): %s, %s: %s", checkers.FormatBytes(k.Limit), files(outCount), checkers.FormatBytes(uint64(outSize)), strings.Join(leftOut, ", "))
		if len(leftOut) < outCount {
			l += ", ..."
		}
		ls = append(ls, l)
	}
	if len(refused) > 0 {
		ls = append(ls, "refused (only directories and regular files are copied): "+strings.Join(refused, ", "))
	}
	if k.Note != "" {
		ls = append(ls, msg(k.Note))
	}
	if len(k.Nodes) == 0 && k.Note == "" {
		ls = append(ls, "no node has a data directory")
	}
	return ls
}

// files is "1 file", "3 files".
func files(n int) string {
	if n == 1 {
		return "1 file"
	}
	return fmt.Sprintf("%d files", n)
}

// Key is the record's key.
func (*Data) Key() string { return Key }

// IsNil: a run that kept nothing, as asked, has no record.
func (k *Data) IsNil() bool { return k == nil }

func decode(b json.RawMessage) (record.Record, error) {
	var k Data
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// Summary is Lines, under "data kept".
func (k *Data) Summary() []record.Line {
	var out []record.Line
	label := "data kept"
	for _, l := range k.Lines() {
		out = append(out, record.Line{Label: label, Text: l})
		label = ""
	}
	return out
}

// Section is the report's "Data kept": Lines.
func (k *Data) Section() (id, title string, lines []string) {
	return "data", "Data kept", k.Lines()
}

// Bound keeps at most lim.Items nodes, each with at most
// runtime.MaxListed entries named (as the harness records them), every
// string cut.
func (k *Data) Bound(lim record.Limits) record.Record {
	out := *k
	out.Mode, out.Note, out.Took = safetext.Clip(k.Mode, lim.Name), safetext.Clip(k.Note, lim.Text), safetext.Clip(k.Took, lim.Name)
	out.Nodes = slices.Clone(k.Nodes[:min(len(k.Nodes), lim.Items)])
	for i := range out.Nodes {
		n := &out.Nodes[i]
		n.Node, n.From, n.Error = safetext.Clip(n.Node, lim.Name), safetext.Clip(n.From, lim.Text), safetext.Clip(n.Error, lim.Text)
		n.LeftOut = boundSkipped(n.LeftOut, lim)
		n.Refused = boundSkipped(n.Refused, lim)
	}
	return &out
}

func boundSkipped(ss []runtime.Skipped, lim record.Limits) []runtime.Skipped {
	out := slices.Clone(ss[:min(len(ss), runtime.MaxListed)])
	for i := range out {
		out[i].Path, out[i].Why = safetext.Clip(out[i].Path, lim.Text), safetext.Clip(out[i].Why, lim.Name)
	}
	return out
}
