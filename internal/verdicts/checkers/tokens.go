package checkers

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/fencecheck/fencecheck/internal/base/history"
)

// Grant is one lock grant: an operation with an acquired phase.
type Grant struct {
	Process history.Process `json:"process"`
	Token   int64           `json:"token"`
	// Invoked is the operation's invocation time, Granted the acquired
	// phase's (ns since the start).
	Invoked int64 `json:"invoked_ns"`
	Granted int64 `json:"granted_ns"`
}

// Kinds of token violations.
const (
	// Duplicate: two grants carry the same token.
	Duplicate = "duplicate"
	// NotIncreasing: grant A was granted before grant B was invoked, yet
	// A's token is higher than B's.
	NotIncreasing = "not-increasing"
)

// TokenViolation is a pair of grants that contradict monotonic tokens; A is
// the earlier grant.
type TokenViolation struct {
	Kind string `json:"kind"`
	A    Grant  `json:"a"`
	B    Grant  `json:"b"`
}

// MaxViolations bounds the violations a TokensResult lists; Count has them
// all.
const MaxViolations = 100

// TokensResult is the verdict on fencing-token monotonicity.
type TokensResult struct {
	Verdict
	Grants int `json:"grants"`
	// Count is the number of violations; Violations lists the first
	// MaxViolations (duplicates first, then by B's invocation).
	Count      int              `json:"violation_count"`
	Violations []TokenViolation `json:"violations,omitempty"`
}

// checkTokens checks fencing tokens: no token is granted twice, and when
// grant A was granted before grant B was invoked, token(A) < token(B). Each
// repeated grant of a token is reported once, against the token's first
// grant; each grant B with an earlier-granted higher token is reported once,
// against the highest such grant. It runs in O(n log n). A history without
// grants is Valid (nothing contradicts monotonicity), and says so; so is
// one whose grants carry no token (token 0: a lock without tokens), whose
// tokenless grants are otherwise left out.
func checkTokens(h *AppendHistory) TokensResult {
	var grants []Grant
	for i := range h.appends {
		a := &h.appends[i]
		if a.Acquired {
			grants = append(grants, Grant{Process: a.Op.Process, Token: a.Token, Invoked: a.Op.Invoke.Time, Granted: a.AcquiredAt})
		}
	}
	return checkGrants(grants)
}

// checkGrants is checkTokens on the grants themselves.
func checkGrants(grants []Grant) TokensResult {
	res := TokensResult{Grants: len(grants)}
	if len(grants) == 0 {
		res.Valid = Valid
		res.Message = "no grants in the history: nothing to contradict"
		return res
	}
	// Token 0 is no token: every target's tokens start at 1, and a user's
	// client program whose lock has none reports none.
	withToken := slices.DeleteFunc(slices.Clone(grants), func(g Grant) bool { return g.Token == 0 })
	if len(withToken) == 0 {
		res.Valid = Valid
		res.Message = fmt.Sprintf("none of the %d grants carried a fencing token (a lock without tokens): nothing to check", len(grants))
		return res
	}
	grants = withToken
	add := func(kind string, a, b Grant) {
		res.Count++
		if len(res.Violations) < MaxViolations {
			res.Violations = append(res.Violations, TokenViolation{Kind: kind, A: a, B: b})
		}
	}

	// Duplicates: the first grant of each token (by grant time) against
	// every later one.
	byGrant := slices.Clone(grants)
	slices.SortStableFunc(byGrant, func(x, y Grant) int { return cmp.Compare(x.Granted, y.Granted) })
	first := make(map[int64]int, len(byGrant))
	for i, g := range byGrant {
		if j, ok := first[g.Token]; ok {
			add(Duplicate, byGrant[j], g)
			continue
		}
		first[g.Token] = i
	}

	// Order: sweep the grants by invocation; before each B, take in every
	// grant granted strictly before B was invoked and keep the highest
	// token among them. A higher token than B's is a violation (an equal
	// one is a duplicate, already reported).
	byInvoke := slices.Clone(grants)
	slices.SortStableFunc(byInvoke, func(x, y Grant) int { return cmp.Compare(x.Invoked, y.Invoked) })
	next, best, have := 0, Grant{}, false
	for _, b := range byInvoke {
		for next < len(byGrant) && byGrant[next].Granted < b.Invoked {
			if g := byGrant[next]; !have || g.Token > best.Token {
				best, have = g, true
			}
			next++
		}
		if have && best.Token > b.Token {
			add(NotIncreasing, best, b)
		}
	}

	if res.Count > 0 {
		res.Valid = Invalid
		res.Message = fmt.Sprintf("%d token violations in %d grants", res.Count, res.Grants)
		if res.Count > len(res.Violations) {
			res.Message += fmt.Sprintf(" (the first %d listed)", len(res.Violations))
		}
		return res
	}
	res.Valid = Valid
	res.Message = fmt.Sprintf("%d grants, tokens unique and increasing", res.Grants)
	return res
}
