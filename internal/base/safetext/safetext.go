// Package safetext is the one filter over text fencecheck prints that
// came from elsewhere: a stored run, a shard, a night, a server's image or
// answers, a client program. Such a value reaches a terminal, a CI log
// (where a line starting "::" is a GitHub Actions workflow command), a
// job summary or a Markdown file; Text makes it one line of visible
// characters, cut to its bound, that starts no workflow command.
package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the values callers print: a name (a node, a target, a path
// inside a run, a leader) and a message (an error, a note, a command).
const (
	MaxName    = 256
	MaxMessage = 4 << 10
)

// Text returns s fit to print: every byte that is not valid UTF-8 and
// every character that is not visible (control characters, line and
// paragraph separators, bidi overrides and isolates, other formatting
// characters, spaces other than U+0020) escaped as Go writes it (\n, \x1b,
// \u202e), a "::" that would start a line (after spaces) neutralised as
// \x3a:, and the result cut to at most n bytes on an escape's boundary,
// followed by "… (N bytes more)" counting the bytes of s not shown.
func Text(s string, n int) string {
	n = max(n, 0)
	var b strings.Builder
	b.Grow(min(len(s), n) + 16)
	lead := true // only spaces so far: a "::" here would start a line
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		var e string
		switch {
		case r == utf8.RuneError && size <= 1:
			e = fmt.Sprintf(`\x%02x`, s[i])
		case lead && r == ':' && strings.HasPrefix(s[i:], "::"):
			e = `\x3a`
		case visible(r):
			e = s[i : i+size]
		case r == '\n':
			e = `\n`
		case r == '\r':
			e = `\r`
		case r == '\t':
			e = `\t`
		case r < 0x80:
			e = fmt.Sprintf(`\x%02x`, r)
		case r <= 0xffff:
			e = fmt.Sprintf(`\u%04x`, r)
		default:
			e = fmt.Sprintf(`\U%08x`, r)
		}
		if b.Len()+len(e) > n {
			fmt.Fprintf(&b, "… (%d bytes more)", len(s)-i)
			return b.String()
		}
		b.WriteString(e)
		lead = lead && r == ' '
		i += size
	}
	return b.String()
}

// visible reports whether r prints as itself on one line: a graphic
// character or U+0020, and no bidi control (which is also a formatting
// character, never a graphic one; listed for the reader).
func visible(r rune) bool {
	return (r == ' ' || unicode.IsPrint(r)) && !unicode.Is(unicode.Bidi_Control, r)
}

// Name is Text bounded to MaxName, and Message Text bounded to MaxMessage.
func Name(s string) string    { return Text(s, MaxName) }
func Message(s string) string { return Text(s, MaxMessage) }

// Clip returns s cut to at most n bytes, on a rune boundary, followed by
// "… (N bytes more)", and nothing else changed: for text that is escaped
// where it is shown (an HTML page), or that Text filters later.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	c := max(n, 0)
	for c > 0 && !utf8.RuneStart(s[c]) {
		c--
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:c], len(s)-c)
}

// Check returns an error naming the first thing in printed (lines of
// output) that no value passed through Text can bring: a character that
// is not visible but a line break, or a line that starts a workflow
// command ("::" after spaces). Tests of what fencecheck prints use it.
func Check(printed string) error {
	for i, line := range strings.Split(printed, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "::") {
			return fmt.Errorf("line %d starts a workflow command: %q", i+1, line)
		}
		if !utf8.ValidString(line) {
			return fmt.Errorf("line %d is not UTF-8: %q", i+1, line)
		}
		for _, r := range line {
			if !visible(r) && r != '\t' {
				return fmt.Errorf("line %d holds %U: %q", i+1, r, line)
			}
		}
	}
	return nil
}

// Markdown returns s, one line of text (Name's, say), as Markdown text
// that renders as s, on one line, wherever it stands in a line (a table
// cell, the start of a list item): Markdown's punctuation is escaped with
// a backslash, a pipe and HTML's <, > and & are character references (a
// pipe so written never splits a table's cell, whichever backslash rule a
// renderer follows), and a start that would open a block (a heading, a
// list, an ordered list's "1.") is escaped too. No tag, link, image, code
// span or emphasis can come of it. A line break in s is left as it is:
// s's caller makes it one line.
func Markdown(s string) string {
	var b strings.Builder
	digits := 0 // leading digits, for an ordered list's marker
	for i, r := range s {
		switch {
		case strings.ContainsRune("\\`*_~[]", r):
			b.WriteByte('\\')
		case r == '|':
			b.WriteString("&#124;")
			continue
		case r == '<':
			b.WriteString("&lt;")
			continue
		case r == '>':
			b.WriteString("&gt;")
			continue
		case r == '&':
			b.WriteString("&amp;")
			continue
		case i == 0 && strings.ContainsRune("#-+=", r):
			b.WriteByte('\\')
		case (r == '.' || r == ')') && i > 0 && digits == i && (i+1 == len(s) || s[i+1] == ' '):
			b.WriteByte('\\')
		}
		if r >= '0' && r <= '9' && digits == i {
			digits++
		}
		b.WriteRune(r)
	}
	return b.String()
}
