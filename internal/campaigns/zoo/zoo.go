// Package zoo is the lock-client zoo's page: from the results of
// matrices run with --client-dir as an axis, a Markdown page with one
// table row per lock client, server, fault and fencing mode over the
// cell's seeds, the belief table of the runs with --recheck (what each
// library said of a lock it no longer held), and a link to one invalid
// run's report per client; or a published copy of that page with what it
// reads and links. The command line (internal/cli) parses zoo's flags and
// calls Write.
package zoo

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/belief"
	"github.com/fencecheck/fencecheck/internal/verdicts/rerun"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// PageFile is the page's name in a published copy: Options.Publish/zoo.md.
const PageFile = "zoo.md"

// Options say what Write reads and where it writes the page.
type Options struct {
	// Results are the matrices' results directories (each holding the
	// matrix.json that fencecheck matrix or merge wrote), in order: a
	// client directory's cells come from the last of them that ran it (of
	// those whose runs had --recheck, for its careful holder's rows, and
	// of the others, for the rest). Every file they hold is input from
	// elsewhere, read within bounds through os.Root.
	Results []string
	// Out is the file the page is written to, its links to the reports
	// relative to Out's directory; "" writes the page to Write's stdout,
	// its links the paths of Results as given.
	Out string
	// Publish, when not "", is a directory to write a copy that stands
	// alone into, instead of the page alone: Publish/zoo.md (PageFile)
	// and what it reads and links (each matrix.json, test.json and
	// results.json; each linked run's report, made again to name the run
	// by its path in Publish, and the files it links, or a note of what
	// was left out). Out must then be "".
	Publish string
}

// Write writes the zoo's page as opt says and returns the file it wrote
// (Out, or Publish/zoo.md), or "" when it wrote the page to stdout, which
// it uses only then. Its error wraps cmdline.ErrUsage (bad input, exit
// 254) when a directory of
// Results cannot be opened, its matrix.json cannot be read or decoded, or
// no cell of any has a client axis, and when both Out and Publish are
// given: then nothing is written. Any other error is one of writing, and
// may leave part of a published copy written.
func Write(opt Options, stdout io.Writer) (string, error) {
	if opt.Publish != "" {
		if opt.Out != "" {
			return "", fmt.Errorf("%w: zoo: Out and Publish both given", cmdline.ErrUsage)
		}
		if err := zooPublish(opt.Results, opt.Publish); err != nil {
			return "", err
		}
		return filepath.Join(opt.Publish, PageFile), nil
	}
	page, err := zooPage(opt.Results, opt.Out)
	if err != nil {
		return "", err
	}
	if opt.Out == "" {
		_, err := io.WriteString(stdout, page)
		return "", err
	}
	if err := os.WriteFile(opt.Out, []byte(page), 0o644); err != nil {
		return "", err
	}
	return opt.Out, nil
}

// zooAxis is the matrix axis that makes a zoo: the lock client of each cell.
const zooAxis = "client-dir"

// The zoo's bounds. Every file it reads is input from elsewhere (a CI
// artifact): maxZooFile bounds matrix.json, maxZooTestInfo a run's
// test.json (some 3 KB when fencecheck wrote it), maxZooRun a cell's run
// path (a longer one is neither read nor linked). On the page,
// maxZooName bounds each name (a client, a server and its version, a
// fault, a fencing mode), maxZooArg each argument of a matrix's command
// and maxZooCommand the command.
const (
	maxZooFile     = 16 << 20
	maxZooTestInfo = 1 << 20
	maxZooResults  = 32 << 20
	maxZooRun      = 1 << 10
	maxZooName     = 120
	maxZooArg      = 1 << 10
	maxZooCommand  = 8 << 10
)

// zooRow is one row of the zoo: a client on a target under a fault and a
// fencing mode, over the cell's seeds.
type zooRow struct {
	client, server, nemesis, fencing string
	runs, invalid, unknown, refused  int
	lost, acknowledged, rejections   int
	firstLost                        []float64
	invalidRun                       string // a report of an invalid run, under its RESULTS
	invalidAt                        int    // the index of that RESULTS
	invalidCell                      string // the run's path in it
	order                            int
	belief                           zooBelief
}

// zooBelief is what a row's libraries said under --recheck, over the
// runs whose results.json has a belief record.
type zooBelief struct {
	runs, unknown                        int
	answers, handovers, stale, rechecked int
	maxNS, ownMaxNS                      int64
	windows                              []int64 // every run's listed windows, for the median
}

// zooMatrix is one RESULTS directory's matrix, opened, with each cell's
// test.json (tests, by cell; zero when it cannot be read); recheck when
// its runs had --recheck (a careful holder's matrix does not supersede the
// rows of one without, nor they its).
type zooMatrix struct {
	dir     string
	root    *os.Root
	m       trends.Matrix
	tests   []store.TestInfo
	recheck bool
}

// owner is the key under which a client directory's cells in this matrix
// supersede an earlier matrix's: the directory, and whether the runs
// rechecked.
func (zm zooMatrix) owner(dir string) string {
	return fmt.Sprintf("%s\x00%t", dir, zm.recheck)
}

// zooPage reads each RESULTS directory and renders the page; out is where
// it will be written ("" stdout), for relative links. A client
// directory's cells come from the last of results that has any (of those
// with --recheck, for its careful holder's rows, and of those without,
// for the others). Every
// name read from a file is cut (zooName) and escaped on the page
// (mdText, mdCode); the matrices' commands are single lines of shell
// words (zooCommand); a report's link is a percent-encoded path (mdLink).
func zooPage(results []string, out string) (string, error) {
	ms, z, err := zooOpen(results)
	defer closeZoo(ms)
	if err != nil {
		return "", err
	}
	return z.markdown(ms, out), nil
}

// closeZoo closes the result directories zooOpen opened.
func closeZoo(ms []zooMatrix) {
	for _, zm := range ms {
		zm.root.Close()
	}
}

// zooOpen opens each RESULTS directory's matrix and tallies the rows; the
// matrices opened are returned, for the caller to close, with an error
// too.
func zooOpen(results []string) ([]zooMatrix, zooTallied, error) {
	var ms []zooMatrix
	owner := map[string]int{} // zooMatrix.owner -> index in ms of the matrix its cells come from
	for _, dir := range results {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return ms, zooTallied{}, fmt.Errorf("%w: zoo: %w", cmdline.ErrUsage, err)
		}
		ms = append(ms, zooMatrix{dir: dir, root: root})
		b, err := trends.ReadBounded(root, trends.MatrixFile, maxZooFile)
		if err != nil {
			return ms, zooTallied{}, fmt.Errorf("%w: zoo: %s: %w", cmdline.ErrUsage, dir, err)
		}
		m, err := trends.DecodeMatrix(b)
		if err != nil {
			return ms, zooTallied{}, fmt.Errorf("%w: zoo: %s: %w", cmdline.ErrUsage, filepath.Join(dir, trends.MatrixFile), err)
		}
		zm := &ms[len(ms)-1]
		zm.m = m
		for _, c := range m.Cells {
			ti := zooTestInfo(root, c)
			zm.tests = append(zm.tests, ti)
			zm.recheck = zm.recheck || ti.Recheck
		}
		for _, c := range m.Cells {
			if d, ok := cellClientDir(m, c); ok {
				owner[zm.owner(d)] = len(ms) - 1
			}
		}
	}
	z := zooTally(ms, owner)
	if len(z.rows) == 0 {
		return ms, z, fmt.Errorf("%w: zoo: %s: no cell has a --client-dir axis (run fencecheck matrix --client-dir builtin,DIR,...)", cmdline.ErrUsage, strings.Join(results, ", "))
	}
	return ms, z, nil
}

// cellClientDir is the client directory of a matrix's cell: its client
// axis, or, in a matrix of one client (whose --client-dir names one
// directory, so that the matrix made no axis of it), that directory.
func cellClientDir(m trends.Matrix, c trends.MatrixCell) (string, bool) {
	if d, ok := c.Axes[zooAxis]; ok {
		return d, true
	}
	dir := ""
	for i, a := range m.Args {
		v, ok := "", false
		switch {
		case a == "--"+zooAxis || a == "-"+zooAxis:
			if i+1 < len(m.Args) {
				v, ok = m.Args[i+1], true
			}
		case strings.HasPrefix(a, "--"+zooAxis+"="), strings.HasPrefix(a, "-"+zooAxis+"="):
			v, ok = a[strings.IndexByte(a, '=')+1:], true
		}
		if !ok {
			continue
		}
		if dir != "" || v == "" || strings.Contains(v, ",") || v == "builtin" {
			return "", false // several: the matrix has the axis
		}
		dir = v
	}
	return dir, dir != ""
}

// zooTallied is the zoo's rows, tallied from the matrices' cells.
type zooTallied struct {
	rows     map[string]*zooRow // by client, server, nemesis and fencing
	clientAt map[string]int     // client -> its place, in the matrices' order
	from     [][]string         // the clients each matrix supplies
	// notKept says, by report path, why a published copy (zoo --publish)
	// has no report of a run the page would link.
	notKept map[string]string
}

// zooTally tallies the cells of the matrices' client axis into rows: a
// client's cells are those of the matrix that owns its directory (owner).
func zooTally(ms []zooMatrix, owner map[string]int) zooTallied {
	rows := map[string]*zooRow{}
	clientAt := map[string]int{}
	from := make([][]string, len(ms))
	inFrom := make([]map[string]bool, len(ms))
	for mi := range inFrom {
		inFrom[mi] = map[string]bool{}
	}
	order := 0
	for mi, zm := range ms {
		for ci, c := range zm.m.Cells {
			dir, ok := cellClientDir(zm.m, c)
			if !ok || owner[zm.owner(dir)] != mi {
				continue
			}
			order++
			ti := zm.tests[ci]
			client := zooName(zooClientName(dir, ti))
			if _, ok := clientAt[client]; !ok {
				clientAt[client] = len(clientAt)
			}
			if !inFrom[mi][client] {
				inFrom[mi][client] = true
				from[mi] = append(from[mi], client)
			}
			server := zooName(c.Target)
			if v := cmp.Or(ti.TargetVersion, c.Version); v != "" {
				server += " " + zooName(v)
			}
			if c.Resource != "" && c.Resource != zooDefaultResource {
				server += ", resource " + zooName(c.Resource)
			}
			nemesis, fencing := zooName(c.Nemesis), zooName(c.Mode())
			if ti.Recheck {
				fencing += " (careful holder)"
			}
			key := strings.Join([]string{client, server, nemesis, fencing}, "\x00")
			r := rows[key]
			if r == nil {
				r = &zooRow{client: client, server: server, nemesis: nemesis, fencing: fencing, order: order}
				rows[key] = r
			}
			r.runs++
			verdict := zooVerdictOf(zm.root, c)
			switch {
			case (c.Verdict == trends.Refused || c.Verdict == trends.Error) && strings.Contains(c.Error, "carry no fencing token"):
				r.refused++
			case verdict == "invalid":
				r.invalid++
				if r.invalidRun == "" && zooRun(c) {
					r.invalidRun = filepath.Join(zm.dir, filepath.FromSlash(c.Run), "report.html")
					r.invalidAt, r.invalidCell = mi, c.Run
				}
			case verdict != "valid":
				r.unknown++
			}
			r.lost += c.Lost
			r.acknowledged += c.Acknowledged
			r.rejections += c.FenceRejections
			if c.FirstLostS != nil {
				r.firstLost = append(r.firstLost, *c.FirstLostS)
			}
			r.belief.add(zooBeliefOf(zm.root, c))
		}
	}
	return zooTallied{rows: rows, clientAt: clientAt, from: from}
}

// markdown is the zoo's page: where it comes from, a row per client,
// server, fault and fencing mode, and a report of each client's first
// invalid run (linked relative to out, the page's file, when given).
func (z zooTallied) markdown(ms []zooMatrix, out string) string {
	from := z.from
	link := func(p string) string {
		if out != "" {
			if r, err := filepath.Rel(filepath.Dir(out), p); err == nil {
				p = r
			}
		}
		return mdLink(filepath.ToSlash(p))
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
			names := make([]string, len(from[mi]))
			for i, c := range from[mi] {
				names[i] = mdText(c)
			}
			fmt.Fprintf(&sb, "From the matrix run of %s (%s):\n\n", zm.m.Started.UTC().Format("2006-01-02 15:04 UTC"), strings.Join(names, ", "))
		}
		fmt.Fprintf(&sb, "    %s\n\n", zooCommand(zm.m.Args))
	}
	sb.WriteString("Each row is one lock client on one server under one fault and fencing mode, over the cell's seeds. " +
		"\"invalid\" counts runs in which an acknowledged update was lost (or another checker failed); " +
		"\"no token\": the client's grants carry no fencing token, so the run was refused before it started.\n\n")
	sb.WriteString(zooColumns)
	for _, m := range zooFaultsMeasured(z.rows) {
		sb.WriteString(m)
	}
	for _, r := range z.rows {
		if r.belief.runs > 0 {
			sb.WriteString("\nThe rows whose fencing says \"careful holder\" are not so: those runs had `--recheck`, and the library was asked again right before each write; what it said is in the table after this one.\n")
			break
		}
	}
	sb.WriteString("\n")
	sb.WriteString("| lock client | server | fault | fencing | verdicts | lost (of acknowledged) | fence rejections | first lost (median) |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range z.ordered() {
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
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s | %s | %d | %s |\n", mdText(r.client), mdText(r.server), mdCode(r.nemesis), mdText(r.fencing), verdicts, lost, r.rejections, first)
	}
	z.beliefTable(&sb)
	sb.WriteString("\nOne invalid run of each client, its report:\n\n")
	linked := z.linked()
	for _, r := range linked {
		if why, ok := z.notKept[r.invalidRun]; ok {
			fmt.Fprintf(&sb, "- %s, %s, fencing %s: report not kept in this copy (%s)\n", mdText(r.client), mdCode(r.nemesis), mdText(r.fencing), mdText(zooName(why)))
			continue
		}
		fmt.Fprintf(&sb, "- %s, %s, fencing %s: [report](%s)\n", mdText(r.client), mdCode(r.nemesis), mdText(r.fencing), link(r.invalidRun))
	}
	if len(linked) == 0 {
		sb.WriteString("- none: no run was invalid.\n")
	}
	return sb.String()
}

// zooBeliefText says what the belief table counts.
const zooBeliefText = "\n## What the libraries believe\n\n" +
	"For the rows of runs with `--recheck` (\"careful holder\"): right before each write, after the fault aimed at it, the holder asks its lock library whether it still holds the lock and writes only when told so, " +
	"and every holder is asked every 50 ms while it holds the lock (a paused holder asks nothing until it resumes). " +
	"Each client answers with its library's own signal (docs/your-client.md). " +
	"\"told held after the next grant\" counts the handovers after which the previous holder's library still said \"held\" once the next holder had been granted the lock; " +
	"\"longest\" and \"median\" are how long after that grant its last \"held\" came (a lower bound: the holder stops asking once it releases); " +
	"\"once running\" is the longest window counted from when its holder could run again (the end of a pause of its container that covered the next grant; the whole window when none did): what the library itself took to find out, as a frozen library can learn nothing. " +
	"\"before a write\" counts those whose last \"held\" was the careful holder's question right before its write, a write the library let through after the next grant. " +
	"With `--resource postgres` the write does not go through the servers a `partition-client` fault cuts, so it lands.\n\n"

// beliefTable writes the belief table, when any row's runs have a
// belief record.
func (z zooTallied) beliefTable(sb *strings.Builder) {
	var rows []*zooRow
	for _, r := range z.ordered() {
		if r.belief.runs > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	sb.WriteString(zooBeliefText)
	sb.WriteString("| lock client | server | fault | runs | answers | told \"held\" after the next grant | longest | median | once running | before a write |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		b := r.belief
		runs := fmt.Sprintf("%d", b.runs)
		if b.unknown > 0 {
			runs += fmt.Sprintf(" (%d unknown: the library cannot be asked)", b.unknown)
		}
		told, longest, med, own, before := fmt.Sprintf("%d of %d handovers", b.stale, b.handovers), "–", "–", "–", fmt.Sprintf("%d", b.rechecked)
		if b.unknown == b.runs {
			told, before = "–", "–"
		}
		if b.stale > 0 {
			ws := slices.Clone(b.windows)
			slices.Sort(ws)
			longest, own = zooDur(b.maxNS), zooDur(b.ownMaxNS)
			if len(ws) > 0 {
				med = zooDur(belief.Median(ws))
			}
		}
		fmt.Fprintf(sb, "| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s |\n", mdText(r.client), mdText(r.server), mdCode(r.nemesis), runs, b.answers, told, longest, med, own, before)
	}
}

// zooDur is a window for the page: "912 ms", "2.43 s".
func zooDur(ns int64) string {
	d := time.Duration(ns)
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// ordered are the rows in the clients' order, each client's in its
// cells' order.
func (z zooTallied) ordered() []*zooRow {
	all := make([]*zooRow, 0, len(z.rows))
	for _, r := range z.rows {
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b *zooRow) int {
		return cmp.Or(cmp.Compare(z.clientAt[a.client], z.clientAt[b.client]), cmp.Compare(a.order, b.order))
	})
	return all
}

// linked are the rows whose invalid run's report the page links: each
// client's first, in the clients' order.
func (z zooTallied) linked() []*zooRow {
	var out []*zooRow
	seen := map[string]bool{}
	for _, r := range z.ordered() {
		if r.invalidRun != "" && !seen[r.client] {
			seen[r.client] = true
			out = append(out, r)
		}
	}
	return out
}

// zooColumns says what the table's columns count and what every row has
// in common: each client program implements the lock only, so fencecheck
// checks the lease (asks the program how much is left) once, right after
// its read, and then writes through its own client of the resource; the
// library is asked nothing between that check and the write.
const zooColumns = "What the columns count and test: \"lost\", acknowledged updates missing from the run's final read (overwritten by a write made from an older read), summed over the cell's runs; " +
	"\"fence rejections\", stale writes the fence refused (a lower token than one the resource had seen); " +
	"\"first lost\", seconds from the run's start to the first lost update, the median of the runs that lost one. " +
	"Every client here implements the lock only: fencecheck asks it how much of the lease is left once, after the read, " +
	"and writes the update itself through its own client of the resource (the default lock-store: a key on the same servers). " +
	"A fault aimed at the holder lands after that check, and the library is asked nothing between the fault and the write, " +
	"so a row says what the lock service and the fault do to a holder that already checked its lease, not what the library's listeners would have done with a later check:\n\n"

// zooFaults is what each fault the zoo runs tests, by the fault's name
// before any ":".
var zooFaults = map[string]string{
	"pause-holder": "- Under `pause-holder`, the holder's whole container (the library and fencecheck's worker) is frozen for 1.5 to 3 leases. " +
		"Unfenced, a row is invalid when the library let its lease lapse during the freeze, so that another client was granted the lock and the frozen holder's write landed after that client's: what a lease lock is meant to do. " +
		"Fenced, it is valid when the library's token grows with every grant, so the resource refuses the late write.\n",
	"partition-client": "- Under `partition-client`, the holder's container (the library and fencecheck's own client of the lock-store) is cut off from the lock service's servers for 1.5 to 3 leases. " +
		"The cut also cuts fencecheck's write to the lock-store, so an unfenced row measures whether a write sent into the cut lands after the heal, through fencecheck's own client of that server, not the library: " +
		"etcd's and Redis's clients keep it in a live TCP connection and deliver it when the cut heals (invalid); " +
		"fencecheck's ZooKeeper client (go-zookeeper) closes a connection silent for 2/3 of the session timeout and the write dies with it, while with `:reset` it waits for a new session and sends the write there (invalid); " +
		"fencecheck's Consul client opens a connection per request, which cannot be made during the cut. " +
		"With the lock-store, the same verdicts come from any client of the same server, one that watches nothing included.\n",
}

// zooFaultsMeasured is the text of zooFaults for the faults of rows, in
// zooFaults's own order of names (pause-holder first).
func zooFaultsMeasured(rows map[string]*zooRow) []string {
	seen := map[string]bool{}
	for _, r := range rows {
		name, _, _ := strings.Cut(r.nemesis, ":")
		seen[name] = true
	}
	var out []string
	for _, name := range []string{"pause-holder", "partition-client"} {
		if seen[name] {
			out = append(out, zooFaults[name])
		}
	}
	return out
}

// zooTestInfo is a cell's test.json, or zero when it cannot be read.
func zooTestInfo(root *os.Root, c trends.MatrixCell) store.TestInfo {
	var ti store.TestInfo
	if !zooRun(c) {
		return ti
	}
	b, err := trends.ReadBounded(root, filepath.Join(c.Run, store.TestFile), maxZooTestInfo)
	if err != nil {
		return ti
	}
	_ = json.Unmarshal(b, &ti)
	return ti
}

// zooDefaultResource is the resource a cell writes when it names none
// other: the page says so only for the others.
const zooDefaultResource = "lock-store"

// zooBeliefOf is the belief record (results.json's "belief") of a cell's
// run, or nil when the run has none (no --recheck), it cannot be read, or
// it holds what no run records (a negative count or window).
func zooBeliefOf(root *os.Root, c trends.MatrixCell) *belief.Belief {
	if !zooRun(c) {
		return nil
	}
	b, err := trends.ReadBounded(root, filepath.Join(c.Run, store.ResultsFile), maxZooResults)
	if err != nil {
		return nil
	}
	var res struct {
		Belief *belief.Belief `json:"belief"`
	}
	if json.Unmarshal(b, &res) != nil || res.Belief == nil {
		return nil
	}
	bl := res.Belief
	if bl.Answers < 0 || bl.Grants < 0 || bl.Stale < 0 || bl.Rechecked < 0 || bl.Rechecked > bl.Stale || bl.MaxNS < 0 || bl.OwnMaxNS < 0 || bl.OwnMaxNS > bl.MaxNS {
		return nil
	}
	for _, w := range bl.Windows {
		if w.WindowNS < 0 || w.WindowNS > bl.MaxNS {
			return nil
		}
	}
	return bl
}

// zooVerdictOf is a cell's verdict: its run's results.json's, when it can
// be read (a run checked again with `fencecheck check` after the matrix,
// by a fencecheck whose checkers changed, says so there), else the
// matrix's.
func zooVerdictOf(root *os.Root, c trends.MatrixCell) string {
	if !zooRun(c) || c.Verdict == trends.Refused || c.Verdict == trends.Error {
		return c.Verdict
	}
	b, err := trends.ReadBounded(root, filepath.Join(c.Run, store.ResultsFile), maxZooResults)
	if err != nil {
		return c.Verdict
	}
	var res struct {
		Valid *bool `json:"valid"`
	}
	if json.Unmarshal(b, &res) != nil {
		return c.Verdict
	}
	switch {
	case res.Valid == nil:
		return "unknown"
	case *res.Valid:
		return "valid"
	}
	return "invalid"
}

// add counts one run's belief record (nil: the run has none).
func (z *zooBelief) add(b *belief.Belief) {
	if b == nil {
		return
	}
	z.runs++
	if b.Unknown != "" {
		z.unknown++
		return
	}
	z.answers += b.Answers
	z.handovers += b.Grants
	z.stale += b.Stale
	z.rechecked += b.Rechecked
	z.maxNS = max(z.maxNS, b.MaxNS)
	z.ownMaxNS = max(z.ownMaxNS, ownMax(b))
	for _, w := range b.Windows {
		z.windows = append(z.windows, w.WindowNS)
	}
}

// ownMax is a record's longest window counted from when its holder could
// run again: its own_max_ns, or, for a record written before that figure,
// its listed windows', each whole but for one with a resume.
func ownMax(b *belief.Belief) int64 {
	m := b.OwnMaxNS
	for _, w := range b.Windows {
		if w.ResumedNS > 0 {
			m = max(m, w.OwnNS)
		} else {
			m = max(m, w.WindowNS)
		}
	}
	return m
}

// zooRun reports whether c's run path is one zoo reads and links: a local
// path inside RESULTS, of at most maxZooRun bytes.
func zooRun(c trends.MatrixCell) bool {
	return c.Run != "" && len(c.Run) <= maxZooRun && filepath.IsLocal(c.Run)
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

// zooName is a name read from a file, fit for the page: valid UTF-8,
// every control or invisible character (a line break, a bidi override)
// shown as U+FFFD, no space around it, and at most maxZooName bytes (cut
// on a rune boundary, with "…").
func zooName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r != ' ' && !unicode.IsPrint(r) {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.TrimSpace(s)
	if len(s) <= maxZooName {
		return s
	}
	cut := maxZooName
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// mdText is s (a zooName) as Markdown text (safetext.Markdown).
var mdText = safetext.Markdown

// mdCode is s (a zooName) as a code span when it is a plain name (letters,
// digits and ,.:=+/_- as in "pause-holder" or "kill:leader"), else as
// mdText: a code span cannot escape a backtick or, in every renderer, a
// pipe.
func mdCode(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(",.:=+/_-", r))) {
			plain = false
			break
		}
	}
	if plain {
		return "`" + s + "`"
	}
	return mdText(s)
}

// mdLink is the path p as a Markdown link's destination: every byte but
// letters, digits and -._~/ percent-encoded, so that no space, parenthesis
// or bracket ends the link and no colon makes a relative path a URL with a
// scheme ("javascript:").
func mdLink(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < utf8.RuneSelf && (unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)) || strings.IndexByte("-._~/", c) >= 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// zooCommand is a matrix's command line as recorded in its matrix.json
// (args), for one line of an indented code block: each argument a shell
// word (rerun.Quote, or $'...' with escapes when it holds a line break or
// another character that does not print), cut to maxZooArg bytes, and the
// line to about maxZooCommand bytes, saying how many arguments were left
// out.
func zooCommand(args []string) string {
	var b strings.Builder
	b.WriteString("fencecheck matrix")
	for i, a := range args {
		if b.Len() > maxZooCommand {
			fmt.Fprintf(&b, " … (%d more arguments)", len(args)-i)
			break
		}
		b.WriteByte(' ')
		b.WriteString(shellWord(safetext.Clip(a, maxZooArg)))
	}
	return b.String()
}

// shellWord is s as one word of a shell command on one line: rerun.Quote
// when every character of s prints, else in $'...' quotes with \n, \t,
// \xHH (a byte that is not UTF-8) and \uHHHH escapes.
func shellWord(s string) string {
	printable := utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r != ' ' && !unicode.IsPrint(r) })
	if printable {
		return rerun.Quote(s)
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString("\\n")
		case r == '\t':
			b.WriteString("\\t")
		case r == ' ' || unicode.IsPrint(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\U%08x", r)
		}
		i += n
	}
	b.WriteByte('\'')
	return b.String()
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
