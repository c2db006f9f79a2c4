package report

import (
	"github.com/fencecheck/fencecheck/internal/record"
	"github.com/fencecheck/fencecheck/internal/records/belief"
	"github.com/fencecheck/fencecheck/internal/records/kept"
	"github.com/fencecheck/fencecheck/internal/records/leaders"
)

// The report's tests read the records the tables register.
func init() { record.Register(leaders.Kind, kept.Kind, belief.Kind) }
