// Command fencecheck-worker is the binary of fencecheck's worker
// containers: fencecheck copies it into the worker image, and the harness
// runs it there as `fencecheck worker` (a lock client it drives), `fencecheck
// proxy` (the proxy resource's fencing proxy) or `fencecheck client-probe`
// (client-check's probe). It links the targets', resources' and workloads'
// client code and nothing of the harness (no Docker SDK, no report), so it
// is a fraction of fencecheck's size and the worker image is rebuilt only
// when that code changes. `make build` builds it beside bin/fencecheck,
// where fencecheck looks for it; without it, the image holds fencecheck
// itself. Exit codes: 0 done, 254 bad arguments, 255 failure.
package main

import (
	"os"

	"github.com/fencecheck/fencecheck/internal/clients/tables"
	"github.com/fencecheck/fencecheck/internal/clients/worker"
)

func main() {
	os.Exit(worker.Main(os.Args[1:], os.Stdout, os.Stderr, tables.Catalog(tables.Targets)))
}
