//go:build race

package checkers

// raceEnabled: the race detector slows checking down many times, so timing
// assertions are skipped under it.
const raceEnabled = true
