// Package layers holds no code, only a test (layers_test.go): every package
// of the module sits in one layer of a declared order, and no package
// imports a package of a higher layer. docs/design.md ("Layers") says the
// order; the test says which import breaks it, and which package is in no
// layer yet. It also checks that no package but internal/harness/docker
// imports the Docker SDK (github.com/docker/...), in its code or its
// tests: the others reach the Engine through internal/runtime.
package layers
