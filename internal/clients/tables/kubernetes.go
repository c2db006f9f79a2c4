//go:build !nokubernetes

package tables

import (
	"github.com/fencecheck/fencecheck/internal/systems/lockservices/kubernetes"
	"github.com/fencecheck/fencecheck/targets"
)

// kubernetesTargets are the Kubernetes targets of Targets: a lease on a
// real kube-apiserver, through client-go's leader election.
var kubernetesTargets = []targets.Target{
	kubernetes.Target{},
	kubernetes.Target{Coordinated: true},
}

// Omitted names the built-in targets this binary was built without: none.
var Omitted []string
