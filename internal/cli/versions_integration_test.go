package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/testkit/suite"
)

// The regression scenario of etcd#11456 on the release Jepsen analysed and
// on today's: 3.4.3's lock RPC grants the lock to a waiter whose lease
// expired while it waited, and the unfenced history is invalid (10 of 10
// runs in the README's series); 3.6.16 refuses it, valid (0 of 10). One
// run each, with test.json naming the version and the recipe. 3.4.3 is an
// image of its own to compile: make test-all.
func TestScenarioEtcd11456(t *testing.T) {
	requireDocker(t)
	t.Parallel()
	fencecheckBinary(t)
	for _, tc := range []struct {
		version string
		code    int
		granted string
	}{
		{"3.4.3", exitInvalid, "GRANTED the lock"},
		{"3.6.16", exitValid, "refused the waiter"},
	} {
		t.Run(tc.version, func(t *testing.T) {
			if tc.version != images.EtcdVersion() {
				suite.All(t, "etcd "+tc.version+"'s image (a compile of its own)")
			}
			t.Parallel()
			res := t.TempDir()
			r := runCLI(t, nil, "run", "--scenario", "etcd-11456", "--version", tc.version, "--results", res, "--quiet")
			t.Cleanup(func() { assertRunsGone(t, res) })
			if r.code != tc.code || !strings.Contains(r.stdout, tc.granted) {
				t.Fatalf("exit %d, want %d, with %q in the output", r.code, tc.code, tc.granted)
			}
			b, err := os.ReadFile(filepath.Join(res, "latest", "test.json"))
			if err != nil {
				t.Fatal(err)
			}
			var test struct {
				TargetVersion string `json:"target_version"`
				Recipe        string `json:"recipe"`
				Scripted      string `json:"scripted"`
			}
			if err := json.Unmarshal(b, &test); err != nil {
				t.Fatal(err)
			}
			if test.TargetVersion != tc.version || test.Recipe != "lock-rpc" || test.Scripted != "etcd-11456" {
				t.Errorf("test.json: %+v", test)
			}
		})
	}
}
