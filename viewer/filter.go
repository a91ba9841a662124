package viewer

import (
	"github.com/rpctap/rpctap/internal/filterexpr"
)

// Filter selects records: the filter language of package filterexpr, which
// the intercepting tap's breakpoints share.
type Filter = filterexpr.Filter

// MatchInfo is what the analysis knows about a record that its bytes do
// not say (filterexpr.MatchInfo).
type MatchInfo = filterexpr.MatchInfo

// ParseFilter parses the filter bar's text (filterexpr.Parse).
func ParseFilter(expr string) (Filter, error) { return filterexpr.Parse(expr) }
