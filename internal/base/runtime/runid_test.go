package runtime

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRunID(t *testing.T) {
	for _, s := range []string{"", ".", "..", "../..", "/", "a\nb", "0123456", "012345678", "0123456G", "ABCDEF01", "../abcdef", "abcd/123", " abcdef1", "abcdef1\x00"} {
		if id, err := ParseRunID(s); err == nil || !errors.Is(err, ErrRunID) {
			t.Errorf("ParseRunID(%q) = %q, %v; want ErrRunID", s, id, err)
		}
	}
	for _, s := range []string{"0123abcd", "ffffffff", "00000000"} {
		if id, err := ParseRunID(s); err != nil || id.String() != s {
			t.Errorf("ParseRunID(%q) = %q, %v", s, id, err)
		}
	}
	for range 100 {
		if id := NewRunID(); mustParse(t, id.String()) != id {
			t.Fatalf("NewRunID %q does not parse back", id)
		}
	}
	var v struct {
		ID RunID `json:"run_id"`
	}
	for _, js := range []string{`{"run_id":""}`, `{"run_id":".."}`, `{"run_id":7}`} {
		if err := json.Unmarshal([]byte(js), &v); err == nil {
			t.Errorf("%s: read as %q", js, v.ID)
		}
	}
	if err := json.Unmarshal([]byte(`{"run_id":"0a1b2c3d"}`), &v); err != nil || v.ID != "0a1b2c3d" {
		t.Errorf("a run id: %q, %v", v.ID, err)
	}
}

func mustParse(t *testing.T, s string) RunID {
	t.Helper()
	id, err := ParseRunID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// FuzzParseRunID: an id ParseRunID takes is one local path element (no
// separator, not "." or ".."), prints as itself and parses again; what it
// refuses is ErrRunID, quoted without control characters.
func FuzzParseRunID(f *testing.F) {
	for _, s := range []string{"", "..", "../..", "a\nb", "0123abcd", "0123ABCD", "/tmp", "0123abc/", "\x1b]0;x\x07"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseRunID(s)
		if err != nil {
			if !errors.Is(err, ErrRunID) || strings.ContainsAny(err.Error(), "\n\r\x00\x1b") {
				t.Fatalf("ParseRunID(%q): %q", s, err)
			}
			return
		}
		p := id.String()
		if p != s || p == "" || !filepath.IsLocal(p) || strings.ContainsAny(p, `/\.`) || filepath.Base(p) != p {
			t.Fatalf("ParseRunID(%q) took %q", s, p)
		}
		if again, err := ParseRunID(p); err != nil || again != id {
			t.Fatalf("%q does not parse again: %v", p, err)
		}
	})
}
