package images

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestRefsAreContentHashes(t *testing.T) {
	if !regexp.MustCompile(`^fencecheck/base:[0-9a-f]{12}$`).MatchString(BaseRef()) {
		t.Errorf("base ref %s", BaseRef())
	}
	if BaseRef() != BaseRef() || EtcdRef() != EtcdRef() {
		t.Errorf("refs are not stable")
	}
	if !strings.HasPrefix(EtcdRef(), "fencecheck/etcd:"+EtcdVersion()+"-") || !strings.HasPrefix(EtcdVersion(), "3.6.") {
		t.Errorf("etcd ref %s (version %s), want a 3.6.x server", EtcdRef(), EtcdVersion())
	}
	if !regexp.MustCompile(`^fencecheck/zookeeper:3\.8\.0-[0-9a-f]{12}$`).MatchString(ZooKeeperRef()) || ZooKeeperRef() != ZooKeeperRef() {
		t.Errorf("zookeeper ref %s", ZooKeeperRef())
	}
	if df := string(mustRead("zookeeper/Dockerfile.txt")); !strings.Contains(df, "FROM ${BASE}") || !strings.Contains(df, "zookeeper default-jre-headless") {
		t.Errorf("zookeeper recipe: %s", df)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("binary one"), 0o755)
	os.WriteFile(b, []byte("binary two"), 0o755)
	ra, err := WorkerRef(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := WorkerRef(b)
	ra2, _ := WorkerRef(a)
	if ra == rb || ra != ra2 {
		t.Errorf("worker refs %s %s %s: want one per binary content", ra, rb, ra2)
	}
	if _, err := WorkerRef(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("missing binary: no error")
	}
}

func TestHashSeparatesParts(t *testing.T) {
	if hashOf([]byte("ab"), []byte("c")) == hashOf([]byte("a"), []byte("bc")) {
		t.Errorf("hashOf does not separate its parts")
	}
}
