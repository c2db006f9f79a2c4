package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// run -f never takes the servers a run attaches to, nor its credentials,
// from a file: not from a stored run's test.json, not from an experiment
// file someone hands you. Each names a server of this machine the workers
// would reach and a local file as its auth_file; run -f without them on
// its command line exits 254 naming the flags, writes no run, and no byte
// reaches the server (the stored server once would have received "AUTH
// admin <the file's first line>").
func TestRunFileTakesNoServersFromTheFile(t *testing.T) {
	const secret = "SECRET-of-the-machine"
	srv := listen(t, stagingAddr(t))
	stored := filepath.Join(storedAttachedRun(t, "redis://"+srv.addr(), secret), store.TestFile)
	authFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(authFile, []byte("admin:"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	handed := writeFile(t, "experiment.yaml", "target: redis\nnemesis: pause-client\nendpoints: redis://"+srv.addr()+"\nauth_file: "+authFile+"\n")
	for _, c := range []struct {
		name, file string
		args, want []string
	}{
		{"a stored run's test.json", stored, nil, []string{"--endpoints", "--auth-file", "never from test.json"}},
		{"a stored run's test.json, endpoints without the auth file", stored, []string{"--endpoints", "redis://10.0.0.1:6379"}, []string{"give --auth-file (or --auth)"}},
		{"an experiment file", handed, nil, []string{handed + ":3: endpoints: the servers a run attaches to and the credentials it presents are never taken from a file"}},
		{"an experiment file, endpoints without the auth file", handed, []string{"--endpoints", "redis://10.0.0.1:6379"}, []string{"give --auth-file (or --auth)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := t.TempDir()
			r := runCLI(t, nil, append([]string{"run", "-f", c.file, "--results", res, "--quiet"}, c.args...)...)
			assertRefusedQuietly(t, r, res, secret, c.want)
		})
	}
	time.Sleep(100 * time.Millisecond) // a connection in flight lands
	if n, got := srv.received(); n > 0 || got != "" {
		t.Errorf("the server the files name received %d connections: %q", n, got)
	}
}
