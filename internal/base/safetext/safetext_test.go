package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"n1", "n1"},
		{"", ""},
		{"a b/c-d.e", "a b/c-d.e"},
		{"\x1b]0;owned\a", `\x1b]0;owned\x07`},
		{"x\r\x1b[2Kfake", `x\r\x1b[2Kfake`},
		{"one\ntwo", `one\ntwo`},
		{"::error::boom", `\x3a:error::boom`},
		{"  ::warning file=x::y", `  \x3a:warning file=x::y`},
		{"a ::error::x", "a ::error::x"}, // not at a line's start
		{":x", ":x"},
		{"abc\u202egpj.exe", `abc\u202egpj.exe`},
		{"\u2066x\u2069", `\u2066x\u2069`},
		{"line\u2028sep", `line\u2028sep`},
		{"nul\x00", `nul\x00`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"c1\u0085", `c1\u0085`},
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"héllo 世界", "héllo 世界"},
	} {
		if got := Text(c.in, 100); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Text(strings.Repeat("a", 300), 10); got != "aaaaaaaaaa… (290 bytes more)" {
		t.Errorf("cut: %q", got)
	}
	// An escape is never split: the cut counts the bytes of the input not
	// shown.
	if got := Text("ab\x1b[2J", 5); got != `ab… (4 bytes more)` {
		t.Errorf("cut at an escape: %q", got)
	}
	if got := Text("世界", 4); got != "世… (3 bytes more)" {
		t.Errorf("cut at a rune: %q", got)
	}
}

func TestClip(t *testing.T) {
	if got := Clip("abc", 3); got != "abc" {
		t.Errorf("%q", got)
	}
	if got := Clip("a世界", 3); got != "a… (6 bytes more)" {
		t.Errorf("%q", got)
	}
}

func TestMarkdown(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"etcd 3.6.16", "etcd 3.6.16"},
		{`a\|b`, `a\\&#124;b`},
		{"<img src=x>", "&lt;img src=x&gt;"},
		{"[x](javascript:y)", `\[x\](javascript:y)`},
		{"*em* _u_ ~~s~~ `c`", "\\*em\\* \\_u\\_ \\~\\~s\\~\\~ \\`c\\`"},
		{"# h", `\# h`},
		{"- - -", `\- - -`},
		{"1. item", `1\. item`},
		{"12) x", `12\) x`},
		{"1.5 s", "1.5 s"},
		{"&amp;", "&amp;amp;"},
	} {
		if got := Markdown(c.in); got != c.want {
			t.Errorf("Markdown(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// checkText is what every output of Text holds: valid UTF-8, one line of
// visible characters (and U+0020), no "::" at its start after spaces, at
// most n bytes before the cut's note, and the input itself when it needs
// nothing.
func checkText(t *testing.T, s string, n int) {
	out := Text(s, n)
	if !utf8.ValidString(out) {
		t.Fatalf("Text(%q, %d) = %q: not UTF-8", s, n, out)
	}
	for _, r := range out {
		if !visible(r) {
			t.Fatalf("Text(%q, %d) = %q: holds %U", s, n, out, r)
		}
	}
	if strings.HasPrefix(strings.TrimLeft(out, " "), "::") {
		t.Fatalf("Text(%q, %d) = %q: starts a workflow command", s, n, out)
	}
	if i := strings.LastIndex(out, "… ("); len(out) > max(n, 0) && (i < 0 || i > max(n, 0) || !strings.HasSuffix(out, " bytes more)")) {
		t.Fatalf("Text(%q, %d) = %q: over its bound", s, n, out)
	}
	clean := utf8.ValidString(s) && !strings.HasPrefix(strings.TrimLeft(s, " "), "::") && len(s) <= n
	for _, r := range s {
		clean = clean && visible(r)
	}
	if clean && out != s {
		t.Fatalf("Text(%q, %d) = %q: changed a clean value", s, n, out)
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"n1", "::error::x", "\x1b]0;t\a", "a\u202eb", "\xff\xfe", " ::set-output name=x::y", strings.Repeat("é", 40)} {
		f.Add(s, 16)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		checkText(t, s, n%(1<<12))
	})
}
