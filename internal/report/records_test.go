package report

import (
	"github.com/fencecheck/fencecheck/internal/base/record"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/belief"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/kept"
	"github.com/fencecheck/fencecheck/internal/verdicts/records/leaders"
)

// The report's tests read the records the tables register.
func init() { record.Register(leaders.Kind, kept.Kind, belief.Kind) }
