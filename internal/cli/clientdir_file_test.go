package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// hangLimit is how long a refusal may take before the test calls it hung:
// a bound on hangs, never a measure of the machine's speed.
const hangLimit = 5 * time.Minute

// buildingClient is a client program's directory whose build step, were
// it run, would leave BUILD_RAN in it.
func buildingClient(t *testing.T) (dir, ran string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "client.json"), []byte(`{"protocol": 1, "command": ["./client"], "build": "id > BUILD_RAN", "target": "etcd"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, "BUILD_RAN")
}

// TestFileNamingClientDirRunsNothing (issue 48, item 2): a client
// program's directory, whose build step is a shell command run on this
// machine as root, comes from the command line only. run -f and matrix -f
// of a file naming client_dir exit 254 and build nothing (the old code ran
// the build), and matrix --list builds nothing even with --client-dir.
func TestFileNamingClientDirRunsNothing(t *testing.T) {
	dir, ran := buildingClient(t)
	tmp := t.TempDir()
	res := filepath.Join(tmp, "results")
	runFile := writeInput(t, filepath.Join(tmp, "run.json"), `{"target": "etcd", "nemesis": "pause-holder", "client_dir": "`+dir+`"}`)
	matrixFile := writeInput(t, filepath.Join(tmp, "matrix.yaml"), "target: [etcd]\nfencing: [none, token]\nclient_dir: ["+dir+"]\n")
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"run -f", []string{"run", "-f", runFile, "--results", res}, exitBadArgs},
		{"matrix -f --list", []string{"matrix", "-f", matrixFile, "--list"}, exitBadArgs},
		{"matrix -f", []string{"matrix", "-f", matrixFile, "--results", res}, exitBadArgs},
		{"matrix --client-dir --list", []string{"matrix", "--client-dir", dir, "--fencing", "none,token", "--list"}, exitValid},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runHostile(t, hangLimit, c.args...)
			want := []string{}
			if c.code == exitBadArgs {
				want = append(want, "client_dir", "command line")
			}
			r.expect(t, c.code, hangLimit, want...)
			if b, err := os.ReadFile(ran); err == nil {
				t.Errorf("the build step ran: %s", b)
				os.Remove(ran)
			}
			if _, err := os.Stat(res); err == nil {
				t.Errorf("%s was made", res)
			}
		})
	}
}
