package cmdline

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// ParseInterspersed takes flags before, between and after positionals, and
// nothing after "--" as a flag.
func TestParseInterspersed(t *testing.T) {
	for _, c := range []struct {
		args     []string
		n        int
		out, pos string
	}{
		{[]string{"a", "b"}, 5, "", "a b"},
		{[]string{"--n", "2", "a"}, 2, "", "a"},
		{[]string{"a", "--n", "2", "--out", "f", "b"}, 2, "f", "a b"},
		{[]string{"a", "--n=3", "b", "-out", "g"}, 3, "g", "a b"},
		{[]string{"a", "--", "--n", "4"}, 5, "", "a --n 4"},
		{[]string{"--out", "f", "--", "-x"}, 5, "f", "-x"},
		{nil, 5, "", ""},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		n, out := fs.Int("n", 5, ""), fs.String("out", "", "")
		if err := ParseInterspersed(fs, c.args); err != nil || *n != c.n || *out != c.out || strings.Join(fs.Args(), " ") != c.pos {
			t.Errorf("%q: err %v, n %d, out %q, positionals %q; want %d %q %q", c.args, err, *n, *out, fs.Args(), c.n, c.out, c.pos)
		}
	}
}

// A bad flag wraps ErrUsage and names the flag; -h is flag.ErrHelp.
func TestParseErrors(t *testing.T) {
	fs := NewFlags("t", io.Discard)
	fs.Int("n", 5, "")
	if err := Parse(fs, []string{"--nope"}); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("--nope: %v, want ErrUsage naming the flag", err)
	}
	if err := ParseInterspersed(fs, []string{"a", "--n", "x"}); !errors.Is(err, ErrUsage) {
		t.Errorf("--n x: %v, want ErrUsage", err)
	}
	if err := Parse(fs, []string{"-h"}); !errors.Is(err, flag.ErrHelp) || errors.Is(err, ErrUsage) {
		t.Errorf("-h: %v, want flag.ErrHelp alone", err)
	}
}
