//go:build nokubernetes

package tables

import "github.com/fencecheck/fencecheck/targets"

// kubernetesTargets is empty in a binary built with -tags nokubernetes: it
// links no client-go (make demo's bin/demo/fencecheck).
var kubernetesTargets []targets.Target

// Omitted names the built-in targets this binary was built without (the
// names kubernetesTargets has in a default build; TestLeanBuild checks
// they agree), so that naming one says why it is missing.
var Omitted = []string{"kubernetes", "kubernetes-cle"}
