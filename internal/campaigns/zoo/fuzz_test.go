package zoo

// The zoo's fuzz target: matrix.json and a run's test.json, made
// elsewhere. Its seeds run in every go test; fuzz it with
//
//	go test -run '^$' -fuzz FuzzZooPage ./internal/campaigns/zoo/

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/safetext"
	"github.com/fencecheck/fencecheck/internal/base/trends"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// FuzzZooPage: whatever a matrix.json and its runs' test.json hold, zoo
// never panics, refuses only with bad input (cmdline.ErrUsage: exit 254), and writes a
// page whose every line is one the zoo writes (zooPageLines: table rows of
// 8 cells, the command on one line, no raw HTML, no link but a report's by
// a safe path, nothing that opens a block), of a size bounded by its
// cells.
func FuzzZooPage(f *testing.F) {
	cell := func(dir, run, extra string) string {
		return `{"target":"etcd","nemesis":"pause-holder","fencing":"none","verdict":"invalid","axes":{"client-dir":` + dir + `},"run":` + run + extra + `}`
	}
	for _, seed := range []struct{ matrix, test string }{
		{`{"args":["--client-dir","builtin,c"],"cells":[` + cell(`"c"`, `"r/1"`, "") + `]}`, `{"client_name":"Curator 5.4.0 InterProcessMutex","target_version":"3.8.0"}`},
		{`{"args":["a\nb# c","| x |"],"cells":[` + cell(`"c"`, `"javascript:alert(1)/1"`, "") + `]}`, `{"client_name":"<script>alert(1)</script>"}`},
		{`{"cells":[` + cell(`"c"`, `"x) [y](javascript:z) (/1"`, "") + `]}`, `{"client_name":"a\\|b","target_version":"3|<b>"}`},
		{`{"cells":[` + cell(`"c|d\n# e"`, `"../x"`, `,"version":"1.\n- x"`) + `]}`, `{"client":"1. x (cmd)"}`},
		{`{"cells":[` + cell(`"builtin"`, `"/etc"`, "") + `]}`, `{"target":"<i>"}`},
		{`{"cells":[{"nemesis":"a` + "`|`" + `b","fencing":"\\\\|","axes":{"client-dir":"c"},"verdict":"refused","error":"carry no fencing token"}]}`, `{}`},
		{`{"cells":[]}`, `null`},
		{`{"cells":[`, ``},
	} {
		f.Add([]byte(seed.matrix), []byte(seed.test))
	}
	f.Fuzz(func(t *testing.T, matrix, test []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, trends.MatrixFile), matrix, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := trends.DecodeMatrix(matrix)
		if err == nil {
			for i, c := range m.Cells {
				if i == 20 || len(m.Cells) > 1000 {
					break
				}
				if zooRun(c) && os.MkdirAll(filepath.Join(dir, c.Run), 0o755) == nil {
					os.WriteFile(filepath.Join(dir, c.Run, store.TestFile), test, 0o644)
				}
			}
		}
		page, err := zooPage([]string{dir}, filepath.Join(dir, "zoo.md"))
		if err != nil {
			if !errors.Is(err, cmdline.ErrUsage) {
				t.Fatalf("refused other than as bad input: %v", err)
			}
			return
		}
		zooPageLines(t, page, 32<<10+4<<10*len(m.Cells))
		if !strings.HasPrefix(page, "# The lock-client zoo\n") {
			t.Fatalf("page starts %q", safetext.Clip(page, 100))
		}
	})
}
