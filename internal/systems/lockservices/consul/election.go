package consul

import (
	"context"

	"github.com/fencecheck/fencecheck/targets"
)

// Election names the recipe of Campaign (targets.Electing).
func (Target) Election() string {
	return "Consul's leader election: a session lock on the leader key (TTL --ttl, lock-delay --lock-delay); term: the leader key's ModifyIndex at the grant"
}

// Campaign is Consul's documented leader election: a session lock on the
// leader key PREFIX/leader, holding the candidate's name; the term is the
// leader key's ModifyIndex right after the grant, as for a lock's token.
func (c *client) Campaign(ctx context.Context, candidate string) (targets.Lease, error) {
	return c.acquireOn(ctx, c.leader, []byte(candidate))
}
