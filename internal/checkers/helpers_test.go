package checkers

import "github.com/fencecheck/fencecheck/internal/history/lockappend/histtest"

// The tests' lock-append histories (histtest).
type hist = histtest.Hist

const (
	ms          = histtest.MS
	raceEnabled = histtest.RaceEnabled
)

var (
	newHist   = histtest.New
	list      = histtest.List
	seq       = histtest.Seq
	pair      = histtest.Pair
	synthetic = histtest.Synthetic
)
