package harness

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/spec"
	"github.com/fencecheck/fencecheck/targets"
)

// What a user gives for attached servers reads into credentials, and what
// cannot be used is refused with the flag's name before anything starts.
func TestAttachedCredentials(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	authFile := write("auth", "app:pa:ss\nignored\n")
	cfg := Config{Spec: spec.Spec{Endpoints: []string{"10.0.0.1:6379"}, AuthFile: authFile}}
	cr, err := cfg.credentials()
	if err != nil || cr == nil || cr.Username != "app" || cr.Password != "pa:ss" {
		t.Fatalf("--auth-file: %+v, %v", cr, err)
	}
	cfg.Spec.AuthFile, cfg.Spec.Auth = "", ":only-a-password"
	if cr, err := cfg.credentials(); err != nil || cr.Username != "" || cr.Password != "only-a-password" {
		t.Errorf("--auth :PW: %+v, %v", cr, err)
	}
	cfg.Spec.Auth = ""
	if cr, err := cfg.credentials(); err != nil || cr != nil {
		t.Errorf("nothing given: %+v, %v; want no credentials", cr, err)
	}
	for _, c := range []struct {
		s    spec.Spec
		want string
	}{
		{spec.Spec{Auth: "no-colon"}, "--auth is USER:PASSWORD"},
		{spec.Spec{Auth: "a:b", AuthFile: authFile}, "--auth and --auth-file"},
		{spec.Spec{AuthFile: write("empty", "\n")}, "first line is empty"},
		{spec.Spec{TLSCert: write("c.pem", "x")}, "--tls-cert and --tls-key go together"},
		{spec.Spec{TLSCA: filepath.Join(dir, "missing.pem")}, "--tls-ca"},
		{spec.Spec{TLSCA: write("bad-ca.pem", "not a certificate")}, "no PEM certificate"},
	} {
		cfg := Config{Spec: c.s}
		_, err := cfg.credentials()
		if !errors.Is(err, targets.ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a bad configuration saying %q", c.s, err, c.want)
		}
	}
}
