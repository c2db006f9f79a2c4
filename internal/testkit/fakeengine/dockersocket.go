package fakeengine

import (
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// DockerSocket is a unix socket where a Docker Engine would listen, for a
// test that asserts no call reaches Docker: it counts the connections
// made to it and answers none (it closes each at once), so that a client
// that calls it fails, and the count says it called.
type DockerSocket struct {
	// Host is its DOCKER_HOST value: unix://PATH.
	Host string
	// Dials counts the connections made to it.
	Dials atomic.Int64
}

// NewDockerSocket listens on a new DockerSocket until the test ends.
func NewDockerSocket(t testing.TB) *DockerSocket {
	t.Helper()
	// A short path: a unix socket's name is at most 107 bytes.
	dir, err := os.MkdirTemp("", "fc-engine-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := &DockerSocket{Host: "unix://" + sock}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.Dials.Add(1)
			c.Close()
		}
	}()
	return s
}
