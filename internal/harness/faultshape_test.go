package harness

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/spec"
	"github.com/fencecheck/fencecheck/internal/clients/workloads/lockappend"
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/etcd"
	"github.com/fencecheck/fencecheck/internal/systems/nemesis"
	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/systems/resources/lockstore"
	"github.com/fencecheck/fencecheck/internal/systems/resources/postgres"
	"github.com/fencecheck/fencecheck/targets"
)

// Validate refuses a fault that cannot apply to the run, naming it and why,
// as a bad configuration: the :resource scope needs a resource with a
// container (the run's, or the audit log's), a partition two servers.
func TestValidateChecksFaultPreconditions(t *testing.T) {
	for _, c := range []struct {
		name    string
		nemesis string
		res     []resources.Resource
		audit   resources.AuditLogger
		nodes   int
		want    string // "" for valid
	}{
		{"lock-store", "partition:resource", []resources.Resource{lockstore.Resource{}}, nil, 0, "--nemesis partition:resource: cannot apply to this run: the :resource scope hits a resource's own container, and the run's resources (lock-store) have none"},
		{"postgres", "partition:resource,kill:resource", []resources.Resource{postgres.Resource{}}, nil, 0, ""},
		{"audit log in postgres", "pause-server:resource", []resources.Resource{lockstore.Resource{}}, postgres.Resource{}, 0, ""},
		{"one server", "kill:leader,partition", []resources.Resource{lockstore.Resource{}}, nil, 1, "--nemesis partition:one: cannot apply to this run: a partition between servers needs 2 servers; this etcd run has 1"},
	} {
		faults, err := nemesis.Parse(c.nemesis)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Target: etcd.Target{}, Workload: lockappend.Workload{}, Resources: c.res, Audit: c.audit, Faults: faults,
			Spec: spec.Spec{Nemesis: c.nemesis, WorkerKnobs: spec.WorkerKnobs{Concurrency: 2}, Nodes: c.nodes, Results: t.TempDir()}}
		cfg.Defaults()
		err = cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, targets.ErrBadConfig) || !errors.Is(err, nemesis.ErrCannotApply) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a bad configuration saying %q", c.name, err, c.want)
		}
	}
}
