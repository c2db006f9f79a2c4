package runtime

import (
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// RunID is a run's id: RunIDLen lowercase hexadecimal digits, as NewRunID
// makes them. It names the run's containers, network and Docker labels
// (LabelRun), its lazy disks' directory on the host and its keys' prefix
// on attached servers, so it is parsed where it enters (a flag, test.json,
// a label read back: ParseRunID, Set, UnmarshalText) and never used
// unparsed: an empty id, or one that is a path ("..", "a/b"), cannot be
// made. The zero RunID is "no id" (a test.json recorded without one).
type RunID string

// RunIDLen is the length of a run id, in hexadecimal digits.
const RunIDLen = 8

// ErrRunID: a string is not a run id.
var ErrRunID = errors.New("not a run id")

// NewRunID makes a new random run id.
func NewRunID() RunID {
	b := make([]byte, RunIDLen/2)
	_, _ = crand.Read(b)
	return RunID(hex.EncodeToString(b))
}

// ParseRunID parses a run id: exactly RunIDLen lowercase hexadecimal
// digits. Anything else is an error wrapping ErrRunID that quotes at most
// the first 64 bytes of s (escaped).
func ParseRunID(s string) (RunID, error) {
	ok := len(s) == RunIDLen
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
	}
	if !ok {
		q := s
		if len(q) > 64 {
			q = q[:64] + "..."
		}
		return "", fmt.Errorf("%w: %s (want %d lowercase hexadecimal digits, as test.json's run_id)", ErrRunID, strconv.QuoteToASCII(q), RunIDLen)
	}
	return RunID(s), nil
}

// String is the id.
func (id RunID) String() string { return string(id) }

// Set parses s into id (flag.Value).
func (id *RunID) Set(s string) error {
	p, err := ParseRunID(s)
	if err != nil {
		return err
	}
	*id = p
	return nil
}

// MarshalText writes the id.
func (id RunID) MarshalText() ([]byte, error) { return []byte(id), nil }

// UnmarshalText parses a JSON string into id: "" is refused, as any
// string that is not a run id.
func (id *RunID) UnmarshalText(b []byte) error { return id.Set(string(b)) }
