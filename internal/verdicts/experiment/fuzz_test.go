package experiment

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/spec"
)

// An experiment file from elsewhere (a test.json rerun reads, a file run
// -f is given) is read or refused as ErrFile, never a panic, and a file
// read gives a Spec or ErrFile; its servers are never the file's.
func FuzzParse(f *testing.F) {
	ps, _ := filepath.Glob(filepath.Join("..", "..", "cli", "testdata", "runs", "*", "test.json"))
	ex, _ := filepath.Glob(filepath.Join("..", "..", "..", "examples", "experiments", "*.yaml"))
	for _, p := range append(ps, ex...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("ttl: &a [1s, *a]\n"))
	f.Add([]byte("run_id: x\nservers: &a [*a]\n"))
	f.Add([]byte("endpoints: redis://evil:1\nauth_file: /etc/shadow\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, kind := range []Kind{Run, Matrix, Stored} {
			file, err := Parse(b, "f", kind)
			if err != nil {
				if !errors.Is(err, ErrFile) {
					t.Fatalf("%v: not ErrFile", err)
				}
				continue
			}
			if kind == Matrix {
				continue
			}
			sp, err := file.Spec(spec.Default(), func(string) bool { return false })
			if err != nil {
				if !errors.Is(err, ErrFile) {
					t.Fatalf("%v: not ErrFile", err)
				}
				continue
			}
			if len(sp.Endpoints) > 0 || sp.AuthFile != "" || sp.TLSCA != "" || sp.TLSCert != "" || sp.TLSKey != "" || strings.TrimSpace(sp.Auth) != "" {
				t.Fatalf("attached from the file: %+v", sp)
			}
		}
	})
}
