package consul

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/images/kinds"
	"github.com/fencecheck/fencecheck/targets"
)

// release is the target's version in the image table.
func (t Target) release() kinds.ServerVersion {
	v, ok := kinds.LookupVersion(kinds.Consul, t.Release)
	if !ok {
		// WithVersion only sets names of the table.
		panic(fmt.Sprintf("consul: no version %q in the image table", t.Release))
	}
	return v
}

// Image is the consul image of the target's version.
func (t Target) Image() string { return kinds.VersionKind(kinds.Consul, t.release().Name) }

// Version is the Consul server version the image runs.
func (t Target) Version() string { return t.release().Server }

// Versions are the names of the consul image's version table (--version).
func (Target) Versions() []string {
	var out []string
	for _, v := range kinds.Versions(kinds.Consul) {
		out = append(out, v.Name)
	}
	return out
}

// WithVersion is Consul running version v (targets.Versioned).
func (t Target) WithVersion(v string) targets.Target {
	t.Release = v
	return t
}

// VersionName is the --version it runs (targets.Versioned).
func (t Target) VersionName() string { return t.release().Name }

// ServerBinary is "consul" (targets.ImageRunner): the command Nodes gives
// is the consul binary and its flags.
func (Target) ServerBinary() string { return "consul" }

// ServerVersion is the version each agent reports in /v1/agent/self, each
// distinct one once, in node order (targets.ImageRunner).
func (t Target) ServerVersion(ctx context.Context, nodes []targets.Node) (string, error) {
	var seen []string
	for _, n := range nodes {
		c, err := newAPI(n.Addr, 2*time.Second, t.Creds)
		if err != nil {
			return "", err
		}
		self, err := c.Agent().Self()
		if err != nil {
			return "", fmt.Errorf("consul: version of %s: %w", n.Name, err)
		}
		v, _ := self["Config"]["Version"].(string)
		if v == "" {
			return "", fmt.Errorf("consul: %s reports no version", n.Name)
		}
		if !slices.Contains(seen, v) {
			seen = append(seen, v)
		}
	}
	return strings.Join(seen, ", "), nil
}
