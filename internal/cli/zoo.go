package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/store"
	"github.com/fencecheck/fencecheck/internal/trends"
)

// zooAxis is the matrix axis that makes a zoo: the lock client of each cell.
const zooAxis = "client-dir"

// maxZooFile bounds each file zoo reads (matrix.json, a run's test.json):
// they are input from elsewhere (a CI artifact).
const maxZooFile = 16 << 20

// cmdZoo is `fencecheck zoo [--out FILE] RESULTS`: the lock-client zoo's
// page, in Markdown, from a matrix (or merged shards) run with --client-dir
// as an axis: one table row per client, target, fault and fencing mode,
// over the cell's seeds.
func cmdZoo(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fset := newFlags("zoo", stderr)
	out := fset.String("out", "", "write the page to FILE (its links to the reports are relative to FILE's directory) instead of stdout")
	fset.Usage = func() {
		fmt.Fprintf(stderr, `Usage: fencecheck zoo [--out FILE] RESULTS...

RESULTS is the results directory of a matrix run with --client-dir as an
axis (fencecheck matrix --client-dir builtin,DIR1,DIR2 ..., or merge of its
shards). Writes the zoo's page in Markdown: for each lock client (its name
and version, as the program reported them), server and version, fault and
fencing mode, the verdicts over the cell's seeds, lost updates, fence
rejections, the first lost update, and a link to the report of one invalid
run per client. A fencing mode the client's grants cannot serve (no token)
is said so. Given several RESULTS, a client directory's cells come from the
last matrix that ran it (a client re-run after a fix replaces its earlier
cells, and the page says which matrix each client's rows come from). Exit
0, 254 if a RESULTS has no matrix.json or none has a client axis.

`)
		fset.PrintDefaults()
	}
	if err := parse(fset, args); err != nil {
		return 0, err
	}
	if fset.NArg() < 1 {
		return 0, fmt.Errorf("%w: zoo needs a RESULTS directory", errUsage)
	}
	page, err := zooPage(fset.Args(), *out)
	if err != nil {
		return 0, err
	}
	if *out == "" {
		_, err := io.WriteString(stdout, page)
		return exitValid, err
	}
	if err := os.WriteFile(*out, []byte(page), 0o644); err != nil {
		return 0, err
	}
	fmt.Fprintf(stderr, "fencecheck: wrote %s\n", *out)
	return exitValid, nil
}

// zooRow is one row of the zoo: a client on a target under a fault and a
// fencing mode, over the cell's seeds.
type zooRow struct {
	client, server, nemesis, fencing string
	runs, invalid, unknown, refused  int
	lost, acknowledged, rejections   int
	firstLost                        []float64
	invalidRun                       string // a report of an invalid run, relative to RESULTS
	order                            int
}

// zooMatrix is one RESULTS directory's matrix, opened.
type zooMatrix struct {
	dir  string
	root *os.Root
	m    trends.Matrix
}

// zooPage reads each RESULTS directory and renders the page; out is where
// it will be written ("" stdout), for relative links. A client
// directory's cells come from the last of results that has any.
func zooPage(results []string, out string) (string, error) {
	var ms []zooMatrix
	defer func() {
		for _, zm := range ms {
			zm.root.Close()
		}
	}()
	owner := map[string]int{} // client directory -> index in ms of the matrix its cells come from
	for _, dir := range results {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return "", fmt.Errorf("%w: zoo: %w", errUsage, err)
		}
		ms = append(ms, zooMatrix{dir: dir, root: root})
		b, err := trends.ReadBounded(root, trends.MatrixFile, maxZooFile)
		if err != nil {
			return "", fmt.Errorf("%w: zoo: %s: %w", errUsage, dir, err)
		}
		m, err := trends.DecodeMatrix(b)
		if err != nil {
			return "", fmt.Errorf("%w: zoo: %s: %w", errUsage, filepath.Join(dir, trends.MatrixFile), err)
		}
		ms[len(ms)-1].m = m
		for _, c := range m.Cells {
			if d, ok := c.Axes[zooAxis]; ok {
				owner[d] = len(ms) - 1
			}
		}
	}
	rows := map[string]*zooRow{}
	var clients []string              // in the matrices' order
	from := make([][]string, len(ms)) // the clients each matrix supplies
	order := 0
	for mi, zm := range ms {
		for _, c := range zm.m.Cells {
			dir, ok := c.Axes[zooAxis]
			if !ok || owner[dir] != mi {
				continue
			}
			order++
			ti := zooTestInfo(zm.root, c)
			client := zooClientName(dir, ti)
			if !slices.Contains(clients, client) {
				clients = append(clients, client)
			}
			if !slices.Contains(from[mi], client) {
				from[mi] = append(from[mi], client)
			}
			server := c.Target
			if v := cmp.Or(ti.TargetVersion, c.Version); v != "" {
				server += " " + v
			}
			key := strings.Join([]string{client, server, c.Nemesis, c.Mode()}, "\x00")
			r := rows[key]
			if r == nil {
				r = &zooRow{client: client, server: server, nemesis: c.Nemesis, fencing: c.Mode(), order: order}
				rows[key] = r
			}
			r.runs++
			switch {
			case (c.Verdict == trends.Refused || c.Verdict == trends.Error) && strings.Contains(c.Error, "carry no fencing token"):
				r.refused++
			case c.Verdict == "invalid":
				r.invalid++
				if r.invalidRun == "" && c.Run != "" && filepath.IsLocal(c.Run) {
					r.invalidRun = filepath.Join(zm.dir, filepath.FromSlash(c.Run), "report.html")
				}
			case c.Verdict != "valid":
				r.unknown++
			}
			r.lost += c.Lost
			r.acknowledged += c.Acknowledged
			r.rejections += c.FenceRejections
			if c.FirstLostS != nil {
				r.firstLost = append(r.firstLost, *c.FirstLostS)
			}
		}
	}
	if len(rows) == 0 {
		return "", fmt.Errorf("%w: zoo: %s: no cell has a --client-dir axis (run fencecheck matrix --client-dir builtin,DIR,...)", errUsage, strings.Join(results, ", "))
	}
	link := func(p string) string {
		if out != "" {
			if r, err := filepath.Rel(filepath.Dir(out), p); err == nil {
				p = r
			}
		}
		return filepath.ToSlash(p)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# The lock-client zoo\n\n")
	used := 0
	for mi := range ms {
		if len(from[mi]) > 0 {
			used++
		}
	}
	if used > 1 {
		sb.WriteString("Generated by `fencecheck zoo` from these matrices: a client's rows come from the last matrix that ran it.\n\n")
	}
	for mi, zm := range ms {
		if len(from[mi]) == 0 {
			continue
		}
		if used == 1 {
			fmt.Fprintf(&sb, "Generated by `fencecheck zoo` from the matrix run of %s:\n\n", zm.m.Started.UTC().Format("2006-01-02 15:04 UTC"))
		} else {
			fmt.Fprintf(&sb, "From the matrix run of %s (%s):\n\n", zm.m.Started.UTC().Format("2006-01-02 15:04 UTC"), mdCell(strings.Join(from[mi], ", ")))
		}
		fmt.Fprintf(&sb, "    fencecheck matrix %s\n\n", strings.Join(zm.m.Args, " "))
	}
	sb.WriteString("Each row is one lock client on one server under one fault and fencing mode, over the cell's seeds. " +
		"\"invalid\" counts runs in which an acknowledged update was lost (or another checker failed); " +
		"\"no token\": the client's grants carry no fencing token, so the run was refused before it started.\n\n")
	sb.WriteString("| lock client | server | fault | fencing | verdicts | lost (of acknowledged) | fence rejections | first lost (median) |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|\n")
	all := make([]*zooRow, 0, len(rows))
	for _, r := range rows {
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b *zooRow) int {
		return cmp.Or(cmp.Compare(slices.Index(clients, a.client), slices.Index(clients, b.client)), cmp.Compare(a.order, b.order))
	})
	for _, r := range all {
		verdicts := fmt.Sprintf("%d of %d invalid", r.invalid, r.runs)
		if r.unknown > 0 {
			verdicts += fmt.Sprintf(", %d unknown", r.unknown)
		}
		if r.refused == r.runs {
			verdicts = "no token (refused)"
		} else if r.refused > 0 {
			verdicts += fmt.Sprintf(", %d refused (no token)", r.refused)
		}
		first := "none"
		if len(r.firstLost) > 0 {
			first = fmt.Sprintf("%.1f s (%d of %d runs)", median(r.firstLost), len(r.firstLost), r.runs)
		}
		lost := fmt.Sprintf("%d of %d", r.lost, r.acknowledged)
		if r.refused == r.runs {
			lost, first = "–", "–"
		}
		fmt.Fprintf(&sb, "| %s | %s | `%s` | %s | %s | %s | %d | %s |\n", mdCell(r.client), mdCell(r.server), mdCell(r.nemesis), mdCell(r.fencing), verdicts, lost, r.rejections, first)
	}
	sb.WriteString("\nOne invalid run of each client, its report:\n\n")
	listed := false
	for _, client := range clients {
		for _, r := range all {
			if r.client == client && r.invalidRun != "" {
				fmt.Fprintf(&sb, "- %s, `%s`, fencing %s: [report](%s)\n", mdCell(client), mdCell(r.nemesis), mdCell(r.fencing), link(r.invalidRun))
				listed = true
				break
			}
		}
	}
	if !listed {
		sb.WriteString("- none: no run was invalid.\n")
	}
	return sb.String(), nil
}

// zooTestInfo is a cell's test.json, or zero when it cannot be read.
func zooTestInfo(root *os.Root, c trends.MatrixCell) store.TestInfo {
	var ti store.TestInfo
	if c.Run == "" || !filepath.IsLocal(c.Run) {
		return ti
	}
	b, err := trends.ReadBounded(root, filepath.Join(c.Run, store.TestFile), maxZooFile)
	if err != nil {
		return ti
	}
	_ = json.Unmarshal(b, &ti)
	return ti
}

// zooClientName is a cell's client: the program's name for itself (its
// library and version), else its manifest's name, else its directory's.
func zooClientName(dir string, ti store.TestInfo) string {
	if dir == "" || dir == "builtin" {
		return "built-in recipe (" + cmp.Or(ti.Target, "its target") + ")"
	}
	if ti.ClientName != "" {
		return ti.ClientName
	}
	if name, _, ok := strings.Cut(ti.Client, " ("); ok && name != "" {
		return name
	}
	return filepath.Base(dir)
}

// mdCell makes s safe in a Markdown table cell: no pipe, no line break.
func mdCell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ", "\r", " ", "`", "'").Replace(s)
}

// median of xs (not empty), which it sorts.
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
