package fencecheck_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README stays a five-minute read that links every page of docs/, and
// every relative link of the README, CONTRIBUTING.md and docs/ leads to a
// file that exists and, with #anchor, to one of its headings.
func TestDocs(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 250 {
		t.Errorf("README.md has %d lines, at most 250", n)
	}
	pages, _ := filepath.Glob("docs/*.md")
	for _, p := range pages {
		if !strings.Contains(string(readme), "("+p) {
			t.Errorf("README.md does not link %s", p)
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range append([]string{"README.md", "CONTRIBUTING.md"}, pages...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := f
			if path != "" {
				file = filepath.Join(filepath.Dir(f), path)
			}
			st, err := os.Stat(file)
			if err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if anchor == "" || st.IsDir() || !strings.HasSuffix(file, ".md") {
				continue
			}
			if !hasAnchor(t, file, anchor) {
				t.Errorf("%s: link %s: %s has no heading #%s", f, target, file, anchor)
			}
		}
	}
}

// hasAnchor says whether a heading of the Markdown file has the anchor
// GitHub gives it: lower case, punctuation but hyphens dropped, spaces as
// hyphens.
func hasAnchor(t *testing.T, file, anchor string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	inCode := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		if strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-") == anchor {
			return true
		}
	}
	return false
}
