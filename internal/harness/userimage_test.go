package harness

import (
	"slices"
	"testing"
)

// The server binary is run at the path the image names, else by name.
func TestServerCommand(t *testing.T) {
	cmd := []string{"/usr/local/bin/etcd", "--name", "n1"}
	for _, tc := range []struct {
		name  string
		named []string
		want  string
	}{
		{"official etcd image: CMD [/usr/local/bin/etcd]", []string{"/usr/local/bin/etcd"}, "/usr/local/bin/etcd"},
		{"elsewhere", []string{"/opt/bitnami/scripts/etcd/entrypoint.sh", "/opt/bitnami/etcd/bin/etcd"}, "/opt/bitnami/etcd/bin/etcd"},
		{"a wrapper and flags only", []string{"docker-entrypoint.sh", "--listen"}, "etcd"},
		{"nothing named", nil, "etcd"},
		{"a name that only contains it", []string{"/usr/bin/etcdctl"}, "etcd"},
	} {
		got := ServerCommand(cmd, "etcd", tc.named)
		if got[0] != tc.want || !slices.Equal(got[1:], cmd[1:]) {
			t.Errorf("%s: %q, want %s and the flags", tc.name, got, tc.want)
		}
	}
	if cmd[0] != "/usr/local/bin/etcd" {
		t.Errorf("ServerCommand changed its argument: %q", cmd)
	}
}
