package cli

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Credential files (--auth-file, --tls-ca, --tls-cert, --tls-key) are
// regular files of bounded size: a FIFO (which blocked the open for
// good, deaf to Ctrl-C), a device that never ends (/dev/zero grew memory
// without bound) or a file past the bound exits 254 at once, naming the
// flag and why, in bounded time and memory.
func TestHostileCredentialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "auth.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := writeInput(t, filepath.Join(dir, "big.pem"), repeat{"x", 2 << 20})
	bigAuth := writeInput(t, filepath.Join(dir, "big.auth"), "user:", repeat{"p", 100 << 10}, "\n")
	if err := os.Chmod(bigAuth, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"a FIFO as --auth-file", []string{"--auth-file", fifo}, []string{"--auth-file", "not a regular file"}},
		{"/dev/zero as --auth-file", []string{"--auth-file", "/dev/zero"}, []string{"--auth-file /dev/zero", "not a regular file"}},
		{"/dev/zero as --tls-ca", []string{"--tls-ca", "/dev/zero"}, []string{"--tls-ca /dev/zero", "not a regular file"}},
		{"a directory as --tls-key", []string{"--tls-cert", writeInput(t, filepath.Join(dir, "cert.pem"), "x"), "--tls-key", dir}, []string{"--tls-key " + dir, "not a regular file (a directory)"}},
		{"2 MiB as --tls-ca", []string{"--tls-ca", big}, []string{"--tls-ca " + big, "larger than"}},
		{"100 KiB as --auth-file", []string{"--auth-file", bigAuth}, []string{"--auth-file " + bigAuth, "larger than"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"run", "--target", "etcd", "--endpoints", "10.0.0.1:2379", "--results", t.TempDir(), "--quiet"}, c.args...)
			r := runHostile(t, 20*time.Second, args...)
			r.expect(t, exitBadArgs, 5*time.Second, c.want...)
		})
	}
}

// rerun reads the credential files its own flags name as run does: a
// FIFO or /dev/zero exits 254 at once.
func TestHostileCredentialFilesThroughRerun(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "auth.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := storedAttachedRun(t, "redis://10.0.0.1:6379", "stored")
	for _, c := range [][]string{{"--auth-file", fifo}, {"--auth-file", "/dev/zero"}, {"--auth-file", "/dev/zero", "--tls-ca", "/dev/zero"}} {
		args := append([]string{"rerun", dir, "--runs", "1", "--results", t.TempDir(), "--quiet", "--endpoints", "redis://10.0.0.1:6379"}, c...)
		r := runHostile(t, 20*time.Second, args...)
		r.expect(t, exitBadArgs, 5*time.Second, "not a regular file")
	}
}
