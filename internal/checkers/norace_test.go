//go:build !race

package checkers

const raceEnabled = false
