package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// A scope may name a tier: the fault picks among that tier's servers, and
// a partition of one server of a tier cuts it off from every other server.
func TestTierScopes(t *testing.T) {
	ctx := context.Background()
	env := &fakeEnv{tiers: map[string]string{"n1": "etcd", "n2": "etcd", "n3": "apiserver"}}
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		scope string
		want  []string
	}{{"one@apiserver", []string{"n3"}}, {"all@etcd", []string{"n1", "n2"}}, {"leader@etcd", []string{"n2"}}} {
		got, err := pickServers(ctx, env, r, c.scope)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v %v, want %v", c.scope, got, err, c.want)
		}
	}
	if _, err := pickServers(ctx, env, r, "leader@apiserver"); err == nil || !strings.Contains(err.Error(), "not of tier apiserver") {
		t.Errorf("leader@apiserver with an etcd leader: %v", err)
	}
	g, leader, err := Partition{Scope: "one@apiserver"}.grudge(ctx, env, r)
	if err != nil || g.String() != "n1 drops n3; n2 drops n3; n3 drops n1,n2" || leader != "" {
		t.Errorf("partition:one@apiserver: %v, leader %q, %v", g, leader, err)
	}
	// partition:leader names the leader it cut off (the env's leader, n2).
	g, leader, err = Partition{Scope: "leader@etcd"}.grudge(ctx, env, r)
	if err != nil || leader != "n2" || !strings.Contains(g.String(), "n2 drops n1,n3") {
		t.Errorf("partition:leader@etcd: %v, leader %q, %v; want n2 cut off and named", g, leader, err)
	}

	tiered := Shape{Target: "kubernetes", Servers: 5, Tiers: map[string]int{"etcd": 3, "apiserver": 2}, LeaderTier: "etcd"}
	plain := Shape{Target: "etcd", Servers: 3}
	for _, c := range []struct {
		nemesis string
		shape   Shape
		why     string // "" applies
	}{
		{"pause-server:one@etcd", tiered, ""},
		{"kill:minority@etcd", tiered, ""},
		{"partition:one@apiserver", tiered, ""},
		{"kill:minority@apiserver", tiered, "needs 3 servers"},
		{"partition:majorities-ring@apiserver", tiered, "needs 3 servers"},
		{"pause-server:one@zookeeper", tiered, `no tier "zookeeper" (its tiers: apiserver, etcd)`},
		{"pause-server:one@etcd", plain, "servers of one kind"},
		{"kill:leader@etcd", tiered, ""},
		{"kill:leader@apiserver", tiered, "the leader of target kubernetes is a server of tier etcd"},
		{"partition:leader@apiserver", tiered, "a server of tier etcd"},
	} {
		fs, err := Parse(c.nemesis)
		if err != nil {
			t.Fatalf("%s: %v", c.nemesis, err)
		}
		err = CheckApplies(fs, c.shape)
		if c.why == "" && err != nil || c.why != "" && (!errors.Is(err, ErrCannotApply) || !strings.Contains(err.Error(), c.why)) {
			t.Errorf("%s on %s: %v, want %q", c.nemesis, c.shape.Target, err, c.why)
		}
	}
	// Only the faults that pick servers by scope take a tier.
	for _, bad := range []string{"pause-server:resource@etcd", "pause-server:some@etcd", "clock-skew:server@etcd", "netem:loss@etcd"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}
