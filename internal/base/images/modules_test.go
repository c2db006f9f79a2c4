package images

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"
)

// requires reads the required module versions of a go.mod file (both the
// one-line and the block form), by module path.
func requires(t *testing.T, data []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	block := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "require (":
			block = true
			continue
		case block && line == ")":
			block = false
			continue
		case strings.HasPrefix(line, "require "):
			line = strings.TrimPrefix(line, "require ")
		case !block:
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 {
			out[f[0]] = f[1]
		}
	}
	if len(out) == 0 {
		t.Fatal("no require lines")
	}
	return out
}

// The default etcd image's module requires every module it shares with
// fencecheck's own at fencecheck's version, so the packages both link
// (the standard library, gRPC, protobuf, golang.org/x/..., zap, etcd's
// client and API) compile once on a fresh machine and the etcd compile
// after make demo's build is only etcd's server (about 60 s of CPU instead
// of 140). A go get in either module that moves a shared version fails
// here until the other follows.
func TestEtcdImageSharesFencecheckModuleVersions(t *testing.T) {
	main, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	own := requires(t, main)
	v := Versions(Etcd)[0]
	etcd := requires(t, mustRead(v.Dir+"/go.mod.txt"))
	shared := 0
	for mod, ver := range etcd {
		if mine, ok := own[mod]; ok {
			shared++
			if mine != ver {
				t.Errorf("%s: etcd image %s requires %s, fencecheck %s (go get %s@%s in %s)", mod, v.Name, ver, mine, mod, mine, v.Dir)
			}
		}
	}
	if shared < 20 {
		t.Errorf("only %d modules shared: gRPC, protobuf and golang.org/x/... at least should be", shared)
	}
}
