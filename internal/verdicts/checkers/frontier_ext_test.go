package checkers_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/fencecheck/fencecheck/internal/verdicts/checkers"
	"github.com/fencecheck/fencecheck/internal/verdicts/checkers/jepsen"
)

// On the 103 jepsen-etcd histories (five processes, values 0 to 4, many
// info cas), the frontier search, wherever its precondition holds, agrees
// with CheckRegister's Porcupine (the histories are short: Porcupine
// judges them).
func TestFrontierOnJepsenEtcd(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "testdata", "jepsen", "jepsen-etcd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	decided := 0
	for _, e := range entries {
		ops, err := jepsen.ReadRegisterLog(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		want := checkers.CheckRegister(ops, checkers.Options{})
		if want.Valid == checkers.Unknown {
			continue // no operation, or none ok
		}
		got, why := checkers.FrontierRegister(ops)
		switch {
		case got == "":
			t.Logf("%s: left to Porcupine: %s", e.Name(), why)
			continue
		case got == string(porcupine.Ok) && want.Valid != checkers.Valid, got == string(porcupine.Illegal) && want.Valid != checkers.Invalid:
			t.Errorf("%s: the frontier search says %s, Porcupine %s", e.Name(), got, want.Valid)
		}
		decided++
	}
	t.Logf("the frontier search decided %d of %d histories", decided, len(entries))
	if decided < len(entries)/2 {
		t.Errorf("decided only %d", decided)
	}
}
