package clientproto

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencecheck/fencecheck/targets"
)

// FuzzLoadManifest feeds Load any client.json: it never panics, every
// refusal is ErrBadConfig (exit 254), and a manifest it accepts names a
// command and the protocol this fencecheck speaks.
func FuzzLoadManifest(f *testing.F) {
	f.Add([]byte(`{"protocol":1,"command":["./c"],"packages":["python3-redis"],"name":"n"}`))
	f.Add([]byte(`{"protocol":1,"command":["./c"]}{"junk":true}`))
	f.Add([]byte(`{"protocol":1,"command":[],"colour":"red"}`))
	f.Add([]byte(`{"protocol":1,"command":["x"],"packages":["a b; rm -rf /"]}`))
	f.Add([]byte("\xff\xfe{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "c"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		s, err := Load(dir, "", "")
		if err != nil {
			if !errors.Is(err, targets.ErrBadConfig) {
				t.Fatalf("refused without ErrBadConfig: %v", err)
			}
			return
		}
		if len(s.Program.Cmd) == 0 || s.Manifest.Protocol != Version {
			t.Fatalf("accepted %q as %+v", data, s)
		}
	})
}
