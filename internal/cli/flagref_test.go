package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The flag reference of docs/running.md is `fencecheck run -h`, flag for
// flag: its name, default and help. FENCECHECK_UPDATE_DOCS=1 rewrites it.
func TestFlagReference(t *testing.T) {
	var help bytes.Buffer
	if _, _, _, err := runConfig([]string{"-h"}, &help, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("run -h: %v", err)
	}
	want := flagTable(t, help.String())
	const doc = "../../docs/running.md"
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- flags: begin (`fencecheck run -h`; TestFlagReference) -->\n", "<!-- flags: end -->\n"
	i, j := bytes.Index(b, []byte(begin)), bytes.Index(b, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", doc, begin, end)
	}
	got := string(b[i+len(begin) : j])
	if got == want {
		return
	}
	if os.Getenv("FENCECHECK_UPDATE_DOCS") == "1" {
		out := append(append(append([]byte{}, b[:i+len(begin)]...), want...), b[j:]...)
		if err := os.WriteFile(doc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the flag reference of %s", doc)
		return
	}
	t.Errorf("%s's flag reference differs from `fencecheck run -h` (FENCECHECK_UPDATE_DOCS=1 go test -run TestFlagReference ./internal/cli/ rewrites it):\n got:\n%s\nwant:\n%s", doc, got, want)
}

// usageLine is a flag's line in -h: "  -name value" or "  -name".
var usageLine = regexp.MustCompile(`^  -([a-z-]+)( \w+)?$`)

// flagTable is the Markdown table of the flags -h lists, in its order.
func flagTable(t *testing.T, help string) string {
	var b strings.Builder
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	lines := strings.Split(help, "\n")
	n := 0
	for k := 0; k < len(lines); k++ {
		m := usageLine.FindStringSubmatch(lines[k])
		if m == nil {
			continue
		}
		var text []string
		for k+1 < len(lines) && strings.HasPrefix(lines[k+1], "    \t") {
			k++
			text = append(text, strings.TrimPrefix(lines[k], "    \t"))
		}
		usage, def := strings.Join(text, " "), ""
		if a := strings.LastIndex(usage, " (default "); a >= 0 && strings.HasSuffix(usage, ")") {
			usage, def = usage[:a], strings.TrimSuffix(usage[a+len(" (default "):], ")")
		}
		if def == "" {
			def = "-"
		}
		esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
		fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", m[1], esc(def), esc(usage))
		n++
	}
	if n < 20 {
		t.Fatalf("run -h lists %d flags:\n%s", n, help)
	}
	return b.String()
}
