package rerun

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// unquote reads one POSIX shell word made of bare characters and
// single-quoted parts (what Quote writes), or reports that it cannot.
func unquote(w string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(w); {
		if w[i] == '\'' {
			j := strings.IndexByte(w[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(w[i+1 : i+1+j])
			i += j + 2
			continue
		}
		if w[i] == '\\' && i+1 < len(w) {
			b.WriteByte(w[i+1])
			i += 2
			continue
		}
		if strings.ContainsRune(" \t\n;&|<>()$`\"*?[]#~!{}", rune(w[i])) {
			return "", false // a character the shell would act on, unquoted
		}
		b.WriteByte(w[i])
		i++
	}
	return b.String(), true
}

// FuzzRunArgs feeds rerun a hostile test.json: RunArgs never panics, and
// every argument it makes comes back whole from the printed command line
// (Quote's words are single shell words that a shell reads back as the
// argument), so that a value in test.json can never add a flag, a command
// or a redirection to the command a report prints.
func FuzzRunArgs(f *testing.F) {
	f.Add([]byte(`{"target":"etcd","workload":"lock-append","seed":42,"fencing":"none","nemesis":"pause-holder","ttl":"2s"}`))
	f.Add([]byte(`{"target":"etcd; rm -rf /","workload":"lock-append","seed":1,"nemesis":"$(reboot)","name":"a'b"}`))
	f.Add([]byte(`{"target":"redis","workload":"register","seed":7,"resources":[{"name":"postgres\n--fencing none","fencing":"token"}]}`))
	f.Add([]byte(`{"scripted":"demo","target":"etcd"}`))
	f.Add([]byte(`{"target":"etcd","workload":"lock-append","seed":3,"ttl":"nonsense"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ti store.TestInfo
		if json.Unmarshal(data, &ti) != nil {
			return
		}
		args, err := RunArgs(ti)
		if err != nil {
			if RunCommand(ti) != "" {
				t.Fatalf("RunArgs failed (%v) but RunCommand printed a command", err)
			}
			return
		}
		for _, a := range args {
			got, ok := unquote(Quote(a))
			if !ok || got != a {
				t.Fatalf("argument %q is printed as %q, read back as %q (%v)", a, Quote(a), got, ok)
			}
		}
		// The command reads back as the same knobs.
		if back, err := spec.Parse(args); err != nil || !slices.Equal(back.Args(), args) {
			t.Fatalf("%q reads back as %q (%v)", args, back.Args(), err)
		}
		if cmd := RunCommand(ti); !strings.HasPrefix(cmd, "fencecheck run ") {
			t.Fatalf("RunCommand %q", cmd)
		}
	})
}
