package spec

import "strings"

// FileKey is the knob's field in an experiment file (`run -f`, `matrix
// -f`): its test.json key, or, for a knob test.json does not record
// (--results, --client-dir, --audit-log), its flag with "_" for "-".
func (k Knob) FileKey() string {
	if k.Key != "" {
		return k.Key
	}
	return strings.ReplaceAll(k.Flag, "-", "_")
}

// Type is the knob's value in an experiment file, as JSON Schema types
// it: "string", "integer", "boolean", "duration" (a string such as 2s),
// "list" (a comma-separated string), "size" (a number of bytes, or a
// string with a unit) or "map" (an object of strings).
func (k Knob) Type() string {
	switch k.field(&Spec{}).(type) {
	case intValue, uint64Value:
		return "integer"
	case boolValue:
		return "boolean"
	case durationValue, optDurationValue:
		return "duration"
	case listValue:
		return "list"
	case bytesValue:
		return "size"
	case mapValue:
		return "map"
	}
	return "string"
}

// Words are the values a knob of a fixed list takes (--keep-data's), nil
// for any other knob.
func (k Knob) Words() []string {
	if v, ok := k.field(&Spec{}).(choiceValue); ok {
		return v.words
	}
	return nil
}

// Copy sets the knob's field of dst to its value in src, set or not.
func (k Knob) Copy(dst, src *Spec) {
	v := k.field(dst)
	v.reset()
	if w := k.field(src); !w.zero() {
		_ = v.Set(w.String()) // a value's own text reads back as it
	}
}
