package jepsen

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds how deeply vectors and maps nest on a line: Jepsen's
// operation maps and log lines nest two or three levels, and a line nested
// deeper is an error (so that a hostile line of brackets costs neither
// stack nor memory beyond its length).
const maxDepth = 64

// maxShown bounds how much of a value or token an error message quotes.
const maxShown = 64

// ednKind is the kind of an EDN value. The reader knows only what Jepsen's
// operation maps and log lines need: nil, integers, strings, keywords,
// vectors and maps.
type ednKind uint8

const (
	ednNil ednKind = iota
	ednInt
	ednString
	ednKeyword
	ednVector
	ednMap
)

func (k ednKind) String() string {
	return [...]string{"nil", "an integer", "a string", "a keyword", "a vector", "a map"}[k]
}

// ednValue is an EDN value. The zero value is nil.
type ednValue struct {
	kind ednKind
	i    int64
	s    string     // a string's contents, a keyword's name without ':'
	list []ednValue // a vector's items; a map's keys and values, alternating
}

// isNil reports whether v is nil.
func (v ednValue) isNil() bool { return v.kind == ednNil }

// isKeyword reports whether v is the keyword :name.
func (v ednValue) isKeyword(name string) bool { return v.kind == ednKeyword && v.s == name }

// get returns the value of map v at keyword :name.
func (v ednValue) get(name string) (ednValue, bool) {
	for i := 0; i+1 < len(v.list); i += 2 {
		if v.list[i].isKeyword(name) {
			return v.list[i+1], true
		}
	}
	return ednValue{}, false
}

// String writes v back as EDN.
func (v ednValue) String() string {
	var b strings.Builder
	v.write(&b, -1)
	return b.String()
}

// short is String cut to about maxShown bytes, for error messages: a value
// from a hostile line may be a megabyte long.
func (v ednValue) short() string {
	var b strings.Builder
	if v.write(&b, maxShown) {
		return b.String()
	}
	return strings.TrimSuffix(b.String(), "…") + "…"
}

// write writes v as EDN to b, stopping once b holds limit bytes or more
// (limit < 0: no limit; with a limit, strings and keywords are cut by
// quote); it reports whether it wrote all of v.
func (v ednValue) write(b *strings.Builder, limit int) bool {
	if limit >= 0 && b.Len() >= limit {
		return false
	}
	switch v.kind {
	case ednNil:
		b.WriteString("nil")
	case ednInt:
		b.WriteString(strconv.FormatInt(v.i, 10))
	case ednString:
		if limit >= 0 && len(v.s) > maxShown {
			b.WriteString(quote(v.s))
			return false
		}
		writeString(b, v.s)
	case ednKeyword:
		if limit >= 0 && len(v.s) > maxShown {
			b.WriteString(":" + cut(v.s) + "…")
			return false
		}
		b.WriteString(":" + v.s)
	case ednVector, ednMap:
		open, sep, end := "[", " ", "]"
		if v.kind == ednMap {
			open, end = "{", "}"
		}
		b.WriteString(open)
		for i, x := range v.list {
			if i > 0 {
				if v.kind == ednMap && i%2 == 0 {
					b.WriteString(", ")
				} else {
					b.WriteString(sep)
				}
			}
			if !x.write(b, limit) {
				return false
			}
		}
		b.WriteString(end)
	}
	return limit < 0 || b.Len() <= limit
}

// writeString writes s as an EDN string literal that reads back as s
// exactly: '"', '\\' and control characters escaped, every other byte as
// it is (str keeps bytes as they are, valid UTF-8 or not).
func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// quote is strconv.Quote of s cut to maxShown bytes (then followed by
// "…"), for error messages.
func quote(s string) string {
	if len(s) <= maxShown {
		return strconv.Quote(s)
	}
	return strconv.Quote(cut(s)) + "…"
}

// cut returns s cut to at most maxShown bytes, on a rune boundary.
func cut(s string) string {
	if len(s) <= maxShown {
		return s
	}
	n := maxShown
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ednReader reads EDN values one after another from a line. Vectors and
// maps nest at most maxDepth deep.
type ednReader struct {
	s     string
	pos   int
	depth int // vectors and maps open around pos
}

// ednError is a syntax error at a column (from 1) of the line.
type ednError struct {
	col int
	msg string
}

func (e *ednError) Error() string { return fmt.Sprintf("column %d: %s", e.col, e.msg) }

func (r *ednReader) errorf(at int, format string, args ...any) error {
	return &ednError{col: at + 1, msg: fmt.Sprintf(format, args...)}
}

// space skips whitespace, commas (whitespace in EDN) and ; comments.
func (r *ednReader) space() {
	for r.pos < len(r.s) {
		switch c := r.s[r.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == ',':
			r.pos++
		case c == ';':
			r.pos = len(r.s)
		default:
			return
		}
	}
}

// done skips space and reports whether the line is used up.
func (r *ednReader) done() bool {
	r.space()
	return r.pos == len(r.s)
}

// value reads the next value.
func (r *ednReader) value() (ednValue, error) {
	r.space()
	if r.pos == len(r.s) {
		return ednValue{}, r.errorf(r.pos, "want a value, found the end of the line")
	}
	start := r.pos
	switch c := r.s[r.pos]; {
	case c == '"':
		return r.str()
	case c == ':':
		r.pos++
		name := r.token()
		if name == "" {
			return ednValue{}, r.errorf(start, "empty keyword")
		}
		return ednValue{kind: ednKeyword, s: name}, nil
	case c == '[':
		return r.seq(ednVector, ']')
	case c == '{':
		v, err := r.seq(ednMap, '}')
		if err != nil {
			return v, err
		}
		if len(v.list)%2 != 0 {
			return ednValue{}, r.errorf(start, "a map with an odd number of forms")
		}
		seen := map[string]bool{}
		for i := 0; i < len(v.list); i += 2 {
			k := v.list[i].String()
			if seen[k] {
				return ednValue{}, r.errorf(start, "duplicate map key %s", v.list[i].short())
			}
			seen[k] = true
		}
		return v, nil
	case c == ']' || c == '}' || c == ')':
		return ednValue{}, r.errorf(start, "unexpected %q", c)
	case c == '-' || c == '+' || (c >= '0' && c <= '9'):
		tok := r.token()
		if tok == "-" || tok == "+" {
			return ednValue{}, r.errorf(start, "unsupported symbol %q", tok)
		}
		n, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			return ednValue{}, r.errorf(start, "%s: want an integer (no big, ratio or floating-point numbers)", quote(tok))
		}
		return ednValue{kind: ednInt, i: n}, nil
	default:
		tok := r.token()
		if tok == "nil" {
			return ednValue{}, nil
		}
		if tok == "" {
			_, size := utf8.DecodeRuneInString(r.s[r.pos:])
			tok = r.s[r.pos : r.pos+size]
		}
		return ednValue{}, r.errorf(start, "unsupported %s: want nil, an integer, a string, a keyword, a vector or a map", quote(tok))
	}
}

// token reads the characters of a symbol, keyword or number.
func (r *ednReader) token() string {
	start := r.pos
	for r.pos < len(r.s) {
		c := r.s[r.pos]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == ',' || c == ';' ||
			c == '"' || c == '[' || c == ']' || c == '{' || c == '}' || c == '(' || c == ')' {
			break
		}
		r.pos++
	}
	return r.s[start:r.pos]
}

// seq reads the items of a vector or map up to end.
func (r *ednReader) seq(kind ednKind, end byte) (ednValue, error) {
	start := r.pos
	if r.depth == maxDepth {
		return ednValue{}, r.errorf(start, "vectors and maps nested more than %d deep", maxDepth)
	}
	r.depth++
	defer func() { r.depth-- }()
	r.pos++
	v := ednValue{kind: kind, list: []ednValue{}}
	for {
		r.space()
		if r.pos == len(r.s) {
			return ednValue{}, r.errorf(start, "%s is not closed by %q", kind, end)
		}
		if r.s[r.pos] == end {
			r.pos++
			return v, nil
		}
		x, err := r.value()
		if err != nil {
			return ednValue{}, err
		}
		v.list = append(v.list, x)
	}
}

// str reads a string literal with its escapes.
func (r *ednReader) str() (ednValue, error) {
	start := r.pos
	r.pos++
	var b strings.Builder
	for {
		if r.pos >= len(r.s) {
			return ednValue{}, r.errorf(start, "string not closed")
		}
		c := r.s[r.pos]
		switch c {
		case '"':
			r.pos++
			return ednValue{kind: ednString, s: b.String()}, nil
		case '\\':
			if r.pos+1 >= len(r.s) {
				return ednValue{}, r.errorf(start, "string not closed")
			}
			esc := r.s[r.pos+1]
			r.pos += 2
			switch esc {
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'n':
				b.WriteByte('\n')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '\\', '"':
				b.WriteByte(esc)
			case 'u':
				if r.pos+4 > len(r.s) {
					return ednValue{}, r.errorf(r.pos-2, `\u wants 4 hex digits`)
				}
				n, err := strconv.ParseUint(r.s[r.pos:r.pos+4], 16, 16)
				if err != nil {
					return ednValue{}, r.errorf(r.pos-2, `\u wants 4 hex digits, found %q`, r.s[r.pos:r.pos+4])
				}
				b.WriteRune(rune(n))
				r.pos += 4
			default:
				return ednValue{}, r.errorf(r.pos-2, "unknown escape \\%c", esc)
			}
		default:
			b.WriteByte(c)
			r.pos++
		}
	}
}

// parseEDN reads all values on a line from byte from on; errors count
// columns from the line's start.
func parseEDN(line string, from int) ([]ednValue, error) {
	r := &ednReader{s: line, pos: from}
	var out []ednValue
	for !r.done() {
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
