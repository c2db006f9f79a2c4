//go:build !race

package histtest

// RaceEnabled is false: the race detector is off.
const RaceEnabled = false
