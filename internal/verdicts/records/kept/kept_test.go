package kept

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
)

// TestKeptLines: what a run kept reads as where each node's copy is, its
// size and what it stored, what the limit left out (named, and counted
// past the names) and what was refused.
func TestKeptLines(t *testing.T) {
	k := &Data{Mode: "auto", Limit: 1 << 20, Took: "1.2s", Nodes: []Node{
		{Node: "n1", From: "/var/lib/etcd", Copied: runtime.Copied{Files: 3, Size: 139 << 20, Stored: 80 << 10,
			Refused: []runtime.Skipped{{Path: "link", Why: `symbolic link to "/etc"`}}, RefusedCount: 1}},
		{Node: "n2", From: "/var/lib/etcd", Copied: runtime.Copied{Files: 1, Size: 100, Stored: 100,
			LeftOut: []runtime.Skipped{{Path: "member/snap/db", Size: 16 << 20, Why: "limit"}}, LeftOutCount: 2, LeftOutSize: 32 << 20},
			Error: "context deadline exceeded"},
	}}
	got := strings.Join(k.Lines(), "\n")
	for _, want := range []string{
		"--keep-data auto (the run is invalid): 2 nodes copied in 1.2s before teardown, at most 1.0 MiB stored\n",
		"data/n1 from n1:/var/lib/etcd: 3 files, 139.0 MiB (80.0 KiB stored: zeros left as holes)\n",
		"data/n2 from n2:/var/lib/etcd: 1 file, 100 B; stopped: context deadline exceeded\n",
		"left out past the 1.0 MiB limit (--keep-data-limit): 2 files, 32.0 MiB: n2:member/snap/db (16.0 MiB), ...\n",
		`refused (only directories and regular files are copied): n1:link (symbolic link to "/etc")`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lines\n%s\nlack %q", got, want)
		}
	}
}

// The names a node's data brings (an image's files, the server's own) and
// a stored results.json's strings reach the terminal through safetext:
// no escape sequence, carriage return, line break or bidi override, no
// line that starts a workflow command, each name cut (issue 48, item 4).
func TestKeptLinesFilterNames(t *testing.T) {
	evil := "x\x1b]0;owned\a\r\x1b[2K\n::error::forged\u202e" + strings.Repeat("y", 5000)
	k := &Data{Mode: "always", Took: evil, Note: evil, Nodes: []Node{{Node: evil, From: evil, Error: evil,
		Copied: runtime.Copied{Refused: []runtime.Skipped{{Path: evil, Why: evil}}, RefusedCount: 2,
			LeftOut: []runtime.Skipped{{Path: evil, Why: evil}}, LeftOutCount: 1}}}}
	lines := k.Lines()
	for _, l := range lines {
		if err := safetext.Check(l); err != nil {
			t.Errorf("%v", err)
		}
		if strings.Contains(l, strings.Repeat("y", safetext.MaxMessage)) {
			t.Errorf("a name shown uncut: %q", l)
		}
	}
}
