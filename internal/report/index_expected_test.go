package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/trends"
)

// The index shows an invalid run that is not judged (an unfenced cell of
// the matrix whose results directory it is) in a neutral colour, and an
// invalid run that must be valid in red; it links only the files a run
// holds.
func TestIndexExpectedInvalid(t *testing.T) {
	root := t.TempDir()
	invalid := `{"valid": false, "workload": "lock-append", "lost_updates": {"acknowledged": 10, "lost": 3}}`
	runs := map[string]string{
		"etcd-none/20261201T000000.000Z":  `{"target": "etcd", "fencing": "none", "workload": "lock-append"}`,
		"etcd-token/20261201T000001.000Z": `{"target": "etcd", "fencing": "token", "workload": "lock-append"}`,
	}
	for dir, test := range runs {
		os.MkdirAll(filepath.Join(root, dir), 0o755)
		os.WriteFile(filepath.Join(root, dir, "test.json"), []byte(test), 0o644)
		os.WriteFile(filepath.Join(root, dir, "results.json"), []byte(invalid), 0o644)
	}
	// No matrix.json: an unfenced run is not judged.
	check := func(what string) {
		t.Helper()
		if err := WriteIndex(root); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(root, IndexFile))
		page := string(b)
		rows := regexp.MustCompile(`(?s)<tr>\s*<td class="v">.*?</tr>`).FindAllString(page, -1)
		if len(rows) != 2 {
			t.Fatalf("%s: %d rows", what, len(rows))
		}
		for _, r := range rows {
			unfenced := strings.Contains(r, "etcd-none/")
			if got := strings.Contains(r, `class="verdict invalid expected"`); got != unfenced {
				t.Errorf("%s: expected-invalid %v in row %s", what, got, r)
			}
			if strings.Contains(r, "history.jsonl") || !strings.Contains(r, "results.json") {
				t.Errorf("%s: links a file the run does not hold, or not one it holds: %s", what, r)
			}
		}
		if !strings.Contains(page, ".verdict.expected{background:#667085}") && !strings.Contains(page, ".verdict.expected{") {
			t.Errorf("%s: no neutral colour for expected verdicts", what)
		}
		if !strings.Contains(page, `invalid as expected (unfenced)</div><div class="v">1</div>`) {
			t.Errorf("%s: no card counting the expected-invalid run", what)
		}
	}
	check("no matrix.json")
	// With a matrix.json, its must_be_valid decides.
	b, err := trends.Matrix{Cells: []trends.MatrixCell{
		{Cell: 0, Target: "etcd", Resource: "lock-store", Nemesis: "kill", Fencing: "none", Verdict: "invalid", Run: "etcd-none/20261201T000000.000Z"},
		{Cell: 1, Target: "etcd", Resource: "lock-store", Nemesis: "kill", Fencing: "token", Verdict: "invalid", MustBeValid: true, Run: "etcd-token/20261201T000001.000Z"},
	}}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, trends.MatrixFile), b, 0o644)
	check("matrix.json")
}
