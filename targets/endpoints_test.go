package targets

import (
	"slices"
	"testing"
)

func TestEndpointsAreTheClientTier(t *testing.T) {
	nodes := []Node{{Name: "e1", Addr: "10.0.0.2:2379", Tier: "etcd"}, {Name: "n1", Addr: "10.0.0.3:6443"}, {Name: "e2", Addr: "10.0.0.4:2379", Tier: "etcd"}, {Name: "n2", Addr: "10.0.0.5:6443"}}
	if got, want := Endpoints(nodes), []string{"10.0.0.3:6443", "10.0.0.5:6443"}; !slices.Equal(got, want) {
		t.Errorf("Endpoints = %v, want %v", got, want)
	}
	if got := Endpoints(nodes[:1]); got != nil {
		t.Errorf("Endpoints of an etcd tier alone = %v, want none", got)
	}
}
