// Package layers holds no code, only a test (layers_test.go): the module's
// folders sit in layers of a declared order, every package takes the layer
// of its folder, and no package imports a package of a higher layer.
// docs/design.md ("Layers") says the order; the test says which import
// breaks it, and which package is in no listed folder. Two more checks: no
// package under internal/systems/lockservices imports one under internal/systems/resources (the
// same layer, but a target is no resource's client: what both need lives
// in internal/systems/servers), and no package but internal/base/platform/docker
// imports the Docker SDK (github.com/docker/...), in its code or its tests:
// the others reach the Engine through internal/base/runtime.
package layers
