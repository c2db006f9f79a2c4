package clientproto

import (
	"os"
	"path/filepath"
	"testing"
)

// A client directory's digest depends on its files' relative paths, modes
// and contents alone (not on where it is, nor on .git), and FirstChange
// names the first file, in path order, that changed, went or came.
func TestDigest(t *testing.T) {
	write := func(dir, name, data string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	digest := func(dir string) Digest {
		d, err := ProgramDir{HostDir: dir}.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := t.TempDir(), t.TempDir()
	for _, dir := range []string{a, b} {
		write(dir, "client.json", `{"protocol":1,"command":["./c"]}`, 0o644)
		write(dir, "src/lock.py", "print(1)\n", 0o644)
	}
	write(b, ".git/HEAD", "ref: x\n", 0o644)
	da, db := digest(a), digest(b)
	if da.Hash != db.Hash || FirstChange(da, db) != "" {
		t.Fatalf("same files, digests %s and %s (first change %q)", da.Hash, db.Hash, FirstChange(da, db))
	}
	for _, c := range []struct {
		name string
		edit func()
		want string
	}{
		{"contents", func() { write(b, "src/lock.py", "print(2)\n", 0o644) }, "src/lock.py"},
		{"mode", func() { write(b, "src/lock.py", "print(1)\n", 0o755) }, "src/lock.py"},
		{"new file", func() { write(b, "a.txt", "x", 0o644) }, "a.txt (new)"},
		{"gone", func() { os.Remove(filepath.Join(b, "client.json")) }, "client.json (gone)"},
	} {
		b = t.TempDir()
		write(b, "client.json", `{"protocol":1,"command":["./c"]}`, 0o644)
		write(b, "src/lock.py", "print(1)\n", 0o644)
		c.edit()
		db := digest(b)
		if db.Hash == da.Hash || FirstChange(da, db) != c.want {
			t.Errorf("%s: hash unchanged %v, first change %q, want %q", c.name, db.Hash == da.Hash, FirstChange(da, db), c.want)
		}
	}
}
