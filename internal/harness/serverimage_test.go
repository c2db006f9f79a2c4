package harness

import (
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/targets"
)

// A node that names its own image runs it with its own command; the
// others run the target's (here a user's image, whose command wraps).
func TestServerImageOfNode(t *testing.T) {
	si := serverImage{kind: UserImageKind, cmd: func(c []string) []string { return append([]string{"/wrapped"}, c...) }}
	kind, cmd := si.of(targets.NodeSpec{Name: "e1", Image: "etcd", Tier: "etcd", Cmd: []string{"etcd"}})
	if kind != "etcd" || !slices.Equal(cmd, []string{"etcd"}) {
		t.Errorf("own image: %s %v", kind, cmd)
	}
	kind, cmd = si.of(targets.NodeSpec{Name: "n1", Cmd: []string{"server"}})
	if kind != UserImageKind || !slices.Equal(cmd, []string{"/wrapped", "server"}) {
		t.Errorf("target's image: %s %v", kind, cmd)
	}
}
