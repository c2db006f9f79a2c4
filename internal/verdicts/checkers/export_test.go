package checkers

// ParseAppends lets the external test appends_ext_test.go set the
// package's tests' lock-append decoder (parseAppends).
var ParseAppends = &parseAppends
