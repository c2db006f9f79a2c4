package experiment

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/spec"
)

// SchemaFiles are the JSON Schemas of the files, by kind, as docs/ keeps
// them (TestSchemaIsCurrent).
var SchemaFiles = map[Kind]string{Run: "experiment.schema.json", Matrix: "matrix.schema.json"}

// durationPattern is a duration as time.ParseDuration reads it.
const durationPattern = `^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// Schema is the JSON Schema (draft 2020-12) of a run file (Run) or a
// matrix file (Matrix), made from spec.Knobs: a property for each knob
// under its test.json key, typed as the loader reads it, with its bounds;
// in a matrix file an axis may be a list of such values. A run file also
// takes the keys a run records (a stored run's test.json). What a schema
// cannot say (a duration's bounds, which names exist, which knobs go
// together) the loader and the run check, naming the field and its line.
func Schema(kind Kind) []byte {
	props := map[string]any{}
	for _, k := range spec.Knobs {
		if k.File == spec.FileNever || kind == Matrix && !matrixTakes(k) {
			continue // refused in a file
		}
		p := valueSchema(k)
		if kind == Matrix && k.Axis {
			p = map[string]any{"anyOf": []any{p, map[string]any{"type": "array", "items": p, "minItems": 1}}}
		}
		p["description"] = "--" + k.Flag + ": " + k.Help + notes(k, kind)
		props[k.FileKey()] = p
	}
	title := "fencecheck run -f: an experiment file"
	desc := "One run of fencecheck: each field a knob of `fencecheck run`, under its test.json key; flags given on the command line override the file. A stored run's test.json is one (the keys a run records besides its knobs are accepted, and read as fencecheck rerun reads them). See docs/experiments.md."
	if kind == Matrix {
		title = "fencecheck matrix -f: a matrix file"
		desc = "A matrix of fencecheck runs: each field a knob of `fencecheck matrix`, under its test.json key; a knob a matrix varies may be a list, a cell each. Flags given on the command line override the file. See docs/experiments.md."
	} else {
		props[ScheduleKey] = scheduleSchema()
		for _, key := range RecordedKeys() {
			if _, knob := props[key]; knob {
				// audit_log: test.json records the audit log's resource.
				p := props[key].(map[string]any)
				props[key] = map[string]any{"description": p["description"], "anyOf": []any{
					map[string]any{"type": p["type"]}, map[string]any{"type": "string", "description": "as test.json records it: the audit log's resource (on)"},
				}}
				continue
			}
			props[key] = map[string]any{"description": "recorded by a run (test.json): accepted, and makes the file a stored run's, not a setting"}
		}
	}
	s := map[string]any{
		"$schema":              "https://json-schema.org/draft/2020-12/schema",
		"$id":                  "https://github.com/fencecheck/fencecheck/docs/" + SchemaFiles[kind],
		"title":                title,
		"description":          desc,
		"type":                 "object",
		"additionalProperties": false,
		"properties":           props,
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err) // maps of strings and numbers
	}
	return append(b, '\n')
}

// scheduleSchema is a run file's schedule: a list of history.FaultStep.
func scheduleSchema() map[string]any {
	dur := map[string]any{"type": "string", "pattern": durationPattern}
	return map[string]any{
		"description": "the faults the run replays, in order, instead of drawing them from --nemesis (fencecheck shrink writes one; rerun replays a stored run's): each waits `after` from the previous fault's heal (the first from the start), then holds `hold` (drawn when absent); a role aims it at the lock holder or the leader of the moment. Every fault must be one of the file's nemesis. An empty list: no fault.",
		"type":        "array",
		"maxItems":    MaxSteps,
		"items": map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"fault", "after"},
			"properties": map[string]any{
				"fault": map[string]any{"type": "string", "minLength": 1, "description": "a fault of --nemesis, with its scope (pause-holder, kill:leader)"},
				"after": dur,
				"hold":  dur,
				"role":  map[string]any{"enum": []any{"holder", "leader"}, "description": "aimed at the holder's failpoint or the leader of the moment, not at nodes"},
				"nodes": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "the nodes it hit when recorded (for a role: who held it then)"},
			},
		},
	}
}

// valueSchema is one value of the knob.
func valueSchema(k spec.Knob) map[string]any {
	switch k.Type() {
	case "integer":
		p := map[string]any{"type": "integer"}
		switch {
		case k.Least > 0:
			p["minimum"] = k.Least
		case k.Positive:
			p["minimum"] = 1
		}
		if k.Most > 0 {
			p["maximum"] = k.Most
		}
		return p
	case "boolean":
		return map[string]any{"type": "boolean"}
	case "duration":
		return map[string]any{"type": "string", "pattern": durationPattern}
	case "size":
		least := 0
		if k.Positive {
			least = 1
		}
		return map[string]any{"type": []any{"integer", "string"}, "minimum": least}
	case "map":
		return map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string", "pattern": "^[^,]+$"}}
	}
	if ws := k.Words(); ws != nil {
		return map[string]any{"type": "string", "enum": ws}
	}
	return map[string]any{"type": "string"}
}

// notes says what the schema's type leaves out: a duration's bounds, a
// list's form, the knob's workload, the command line's part.
func notes(k spec.Knob, kind Kind) string {
	var n []string
	if k.Type() == "duration" {
		n = append(n, "a duration such as 2s, 500ms, 1m30s")
		if k.Positive {
			n = append(n, "positive")
		}
		if k.Least > 0 {
			n = append(n, "at least "+durationText(k.Least))
		}
		if k.Most > 0 {
			n = append(n, "at most "+durationText(k.Most))
		}
	}
	if k.Type() == "list" {
		n = append(n, "comma-separated")
	}
	if k.Workload != "" {
		n = append(n, "the "+k.Workload+" workload's")
	}
	if kind == Matrix && k.Axis {
		n = append(n, "a list: a cell each")
	}
	switch {
	case k.File == spec.FileAsks && k.Attach:
		n = append(n, "never taken from a file: with it, the command line must give --endpoints and the credentials")
	case k.File == spec.FileAsks:
		n = append(n, "never taken from a file: with it, the command line must give --"+k.Flag)
	}
	if len(n) == 0 {
		return ""
	}
	return " (" + strings.Join(n, "; ") + ")"
}

func durationText(ns int64) string { return time.Duration(ns).String() }
