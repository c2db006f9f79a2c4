//go:build race

package histtest

// RaceEnabled: the race detector slows checking down many times, so timing
// assertions are skipped under it.
const RaceEnabled = true
