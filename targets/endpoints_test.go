package targets

import (
	"slices"
	"testing"
)

type tiered struct {
	Target
	client string
}

func (t tiered) ClientTier() string { return t.client }
func (t tiered) LeaderTier() string { return "etcd" }

func TestEndpointsAreTheClientTier(t *testing.T) {
	nodes := []Node{{Name: "e1", Addr: "10.0.0.2:2379", Tier: "etcd"}, {Name: "a1", Addr: "10.0.0.3:6443", Tier: "apiserver"}, {Name: "e2", Addr: "10.0.0.4:2379", Tier: "etcd"}, {Name: "a2", Addr: "10.0.0.5:6443", Tier: "apiserver"}}
	if got, want := Endpoints(tiered{client: "apiserver"}, nodes), []string{"10.0.0.3:6443", "10.0.0.5:6443"}; !slices.Equal(got, want) {
		t.Errorf("Endpoints = %v, want %v", got, want)
	}
	if got := Endpoints(tiered{client: "apiserver"}, nodes[:1]); got != nil {
		t.Errorf("Endpoints of an etcd tier alone = %v, want none", got)
	}
	one := []Node{{Name: "n1", Addr: "10.0.0.2:2379"}, {Name: "n2", Addr: "10.0.0.3:2379"}}
	if got := Endpoints(nil, one); len(got) != 2 {
		t.Errorf("Endpoints of a target of one kind = %v, want every node", got)
	}
}
