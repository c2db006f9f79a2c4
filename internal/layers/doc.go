// Package layers holds no code, only a test (layers_test.go): the module's
// folders sit in layers of a declared order, every package takes the layer
// of its folder, and no package imports a package of a higher layer.
// docs/design.md ("Layers") says the order; the test says which import
// breaks it, and which package is in no listed folder. Two more checks: no
// package under internal/targets imports one under internal/resources (the
// same layer, but a target is no resource's client: what both need lives
// in internal/servers), and no package but internal/platform/docker
// imports the Docker SDK (github.com/docker/...), in its code or its tests:
// the others reach the Engine through internal/runtime.
package layers
