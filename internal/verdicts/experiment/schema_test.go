package experiment

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

const docs = "../../../docs"

// The schemas in docs/ are the ones the knobs table makes:
// FENCECHECK_UPDATE_DOCS=1 (make schema) rewrites them.
func TestSchemaIsCurrent(t *testing.T) {
	for kind, name := range SchemaFiles {
		p := filepath.Join(docs, name)
		want := Schema(kind)
		if os.Getenv("FENCECHECK_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not the schema spec.Knobs makes (%v): make schema rewrites it", p, err)
		}
	}
}

// schemas are the committed schemas, compiled by a JSON Schema validator.
func schemas(t *testing.T) map[Kind]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	out := map[Kind]*jsonschema.Schema{}
	for kind, name := range SchemaFiles {
		b, err := os.ReadFile(filepath.Join(docs, name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(name, doc); err != nil {
			t.Fatal(err)
		}
		if out[kind], err = c.Compile(name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return out
}

// validate checks a file against a schema, as an editor would.
func validate(t *testing.T, sch *jsonschema.Schema, file []byte) error {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal(file, &doc); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(toAny(doc.Content[0]))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(inst)
}

// The schema and the loader agree on what a schema can say: the fields,
// their types, a list where an axis may be one, bounds of counts.
func TestSchemaAgreesWithTheLoader(t *testing.T) {
	sch := schemas(t)
	for _, c := range []struct {
		kind Kind
		file string
		ok   bool
	}{
		{Run, "target: etcd\nttl: 2s\nconcurrency: 3\nside_writer: true\nresource: lock-store,postgres\n", true},
		{Run, "check_memory: 6GiB\nlock_delay: 1m30s\nseed: 18446744073709551615\nimage:\n  target: a/b:1\n", true},
		{Run, "check_memory: 1000000\nrecipe: lock-rpc\nresults: ./r\naudit_log: true\n", true},
		{Run, "client_dir: builtin\n", false},
		{Matrix, "client_dir: [builtin]\n", false},
		{Run, "audit_log: postgres\nrun_id: 0123abcd\nservers: []\n", true},
		{Run, "tl: 3\n", false},
		{Run, "ttl: 2\n", false},
		{Run, "ttl: two\n", false},
		{Run, "concurrency: \"5\"\n", false},
		{Run, "concurrency: 65\n", false},
		{Run, "concurrency: 0\n", false},
		{Run, "side_writer: yes\n", false},
		{Run, "ttl: [1s, 2s]\n", false},
		{Run, "auth: a:b\n", false},
		{Run, "image: x\n", false},
		{Run, "endpoints: redis://h:1\nauth_file: /f\ntls_ca: /ca\n", true},
		{Matrix, "target: [etcd, redis]\nttl: [1s, 2s]\nnemesis: [pause-holder, \"kill,partition\"]\nside_writer: [false, true]\n", true},
		{Matrix, "target: etcd\nconcurrency: [2, 5]\nresults: out\nseed: 3\n", true},
		{Matrix, "acquire_timeout: [1s, 2s]\n", false},
		{Matrix, "ttl: []\n", false},
		{Matrix, "concurrency: [2, 65]\n", false},
		{Matrix, "run_id: abc\n", false},
		{Matrix, "auth: a:b\n", false},
		{Matrix, "name: x\n", false},
		{Matrix, "audit_log: postgres\n", false},
	} {
		_, lerr := Parse([]byte(c.file), "x.yaml", c.kind)
		serr := validate(t, sch[c.kind], []byte(c.file))
		if (lerr == nil) != c.ok || (serr == nil) != c.ok {
			t.Errorf("%q (%s): loader %v, schema %v; want ok %v", c.file, SchemaFiles[c.kind], lerr, serr, c.ok)
		}
	}
}

// Every stored run's test.json is valid under the run schema.
func TestStoredRunsMatchTheSchema(t *testing.T) {
	sch := schemas(t)
	ps, _ := filepath.Glob(filepath.Join("..", "..", "cli", "testdata", "runs", "*", store.TestFile))
	for _, p := range ps {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(t, sch[Run], b); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// The example files (examples/experiments) name their schema on their
// first line (for editors), are valid under it, and load.
func TestExamples(t *testing.T) {
	sch := schemas(t)
	ps, _ := filepath.Glob(filepath.Join("..", "..", "..", "examples", "experiments", "*.yaml"))
	if len(ps) < 2 {
		t.Fatalf("%d examples", len(ps))
	}
	kinds := map[string]Kind{}
	for kind, name := range SchemaFiles {
		kinds["# yaml-language-server: $schema=../../docs/"+name] = kind
	}
	for _, p := range ps {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		kind, ok := kinds[first]
		if !ok {
			t.Errorf("%s: its first line %q names no schema of docs/", p, first)
			continue
		}
		if err := validate(t, sch[kind], b); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if _, err := Parse(b, p, kind); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
