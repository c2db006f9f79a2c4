package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A client program whose client.json declares that its grants carry no
// fencing token ("tokens": false) is refused with --fencing token at
// once, exit 254, naming the program and the fencing, before anything
// starts: no run directory (it used to be refused by each worker once the
// cluster was up, 35 s in, leaving a run with an empty history), and
// before its build step runs. Without the declaration the program says at
// init, as before (TestClientWithoutTokensRefusesTokenFencing).
func TestTokenlessClientRefusedBeforeAnything(t *testing.T) {
	dir := t.TempDir()
	built := filepath.Join(dir, "built")
	manifest := `{"protocol": 1, "name": "tokenless lock", "command": ["./client"], "target": "redis", "tokens": false,
  "build": "touch built"}`
	if err := os.WriteFile(filepath.Join(dir, "client.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fencing := range []string{"token", "lock-store=token"} {
		t.Run(fencing, func(t *testing.T) {
			res := filepath.Join(t.TempDir(), "results")
			r := runHostile(t, 30*time.Second, "run", "--target", "redis", "--client-dir", dir, "--fencing", fencing,
				"--nemesis", "pause-holder", "--results", res, "--quiet")
			r.expect(t, exitBadArgs, 5*time.Second, `"tokenless lock"`, "carry no fencing token", `"tokens": false`, "--fencing "+fencing, dir)
			if _, err := os.Stat(res); !os.IsNotExist(err) {
				ents, _ := os.ReadDir(res)
				t.Errorf("the refused run made its results directory (%d entries)", len(ents))
			}
			if _, err := os.Stat(built); err == nil {
				t.Errorf("the refused run's client was built")
			}
		})
	}
}
