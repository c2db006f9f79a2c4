package checkers

import "time"

// ParseAppends lets the external test appends_ext_test.go set the
// package's tests' lock-append decoder (parseAppends).
var ParseAppends = &parseAppends

// FrontierRegister lets external tests run the frontier search on ops, all
// on one key: its result (porcupine.Ok, porcupine.Illegal, or "" when its
// precondition did not hold) and why it gave up.
func FrontierRegister(ops []RegisterOp) (result string, why string) {
	maybe := make([]bool, len(ops))
	var idx []int32
	for i, o := range ops {
		keep, m, err := classify(o.Type, o.F == RegisterRead)
		if err != nil {
			panic(err)
		}
		if keep {
			idx = append(idx, int32(i))
		}
		maybe[i] = m
	}
	r := frontierRegister(ops, idx, maybe, time.Time{}, nil, nil)
	return string(r.result), r.why
}
