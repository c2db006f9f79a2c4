package experiment

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/spec"
)

// What a file may say (issue 48, items 2 and 9), walked over every field of
// the knobs table and both schemas: "file", a knob a file sets (the
// command line's flag still overrides it); "command line", a field a file
// may name but whose value comes from the command line only: without the
// flag given there the file is refused, with it the file's value is never
// used (the servers a run attaches to, its credentials, and where results
// go); "never", a field no file may name (a secret, a client program's
// directory, whose build step runs on this machine as root).
func TestWhatAFileMaySay(t *testing.T) {
	rule := map[string]string{
		"endpoints": "command line", "tls-ca": "command line", "tls-cert": "command line", "tls-key": "command line",
		"tls-server-name": "command line", "auth-file": "command line", "results": "command line",
		"auth": "never", "client-dir": "never",
	}
	// A value of each knob that the command line does not give (cmd: one
	// it gives instead).
	sample := func(k spec.Knob) (file, cmd string) {
		switch k.Flag {
		case "target":
			return "redis", "etcd"
		case "version", "recipe", "read-mode", "name", "client-cmd":
			return "file-x", "cmd-y"
		case "workload":
			return "register", "lock-append"
		case "resource":
			return "lock-store,postgres", "lock-store"
		case "fencing":
			return "token", "cas"
		case "nemesis":
			return "kill", "pause-holder"
		case "image":
			return "{target: file/etcd:1}", "target=cmd/etcd:1"
		case "client-image":
			return "file/client:1", "cmd/client:1"
		case "keep-data":
			return "always", "never"
		case "endpoints":
			return "redis://file-host:1", "redis://cmd-host:2"
		case "auth":
			return "u:file", "u:cmd"
		case "seed":
			return "7", "8"
		case "concurrency", "nodes", "locks", "keys":
			return "3", "4"
		}
		switch k.Type() {
		case "duration":
			return "3s", "4s"
		case "boolean":
			return "true", "false"
		case "size":
			return "1MiB", "2MiB"
		}
		return "/file/" + k.Flag, "/cmd/" + k.Flag
	}
	runSchema, matrixSchema := string(Schema(Run)), string(Schema(Matrix))
	for _, k := range spec.Knobs {
		want := rule[k.Flag]
		if want == "" {
			want = "file"
		}
		fileVal, cmdVal := sample(k)
		file := fmt.Sprintf("%s: %s\n", k.FileKey(), fileVal)
		if k.Attach && k.Flag != "endpoints" {
			file = "endpoints: redis://file-host:1\n" + file
		}
		got := func(given spec.Spec, set func(string) bool) (string, error) {
			f, err := Parse([]byte(file), "x.yaml", Run)
			if err != nil {
				return "", err
			}
			sp, err := f.Spec(given, set)
			if err != nil {
				return "", err
			}
			return k.Value(&sp).String(), nil
		}
		var fromFile, fromCmd spec.Spec
		if err := k.Value(&fromFile).Set(strings.Trim(fileVal, "{}")); err != nil && k.Type() != "map" {
			t.Fatalf("%s: sample %q: %v", k.Flag, fileVal, err)
		}
		if err := k.Value(&fromCmd).Set(cmdVal); err != nil {
			t.Fatalf("%s: sample %q: %v", k.Flag, cmdVal, err)
		}
		// Nothing on the command line.
		v, err := got(spec.Default(), none)
		switch {
		case want == "file" && (err != nil || v == k.Value(&spec.Spec{}).String()):
			t.Errorf("%s (%s): a file may set it; got %q, %v", k.FileKey(), want, v, err)
		case want != "file" && (err == nil || !errors.Is(err, ErrFile)):
			t.Errorf("%s (%s): a file naming it without --%s on the command line: got %q, %v; want refused", k.FileKey(), want, k.Flag, v, err)
		}
		// The command line gives it (and --endpoints, for a credential).
		given, set := spec.Default(), map[string]bool{k.Flag: true}
		k.Copy(&given, &fromCmd)
		if k.Attach && k.Flag != "endpoints" {
			ep, _ := KnobOf("endpoints")
			_ = ep.Value(&given).Set("redis://cmd-host:2")
			set["endpoints"] = true
		}
		v, err = got(given, func(f string) bool { return set[f] })
		switch {
		case want == "never" && (err == nil || !errors.Is(err, ErrFile)):
			t.Errorf("%s (never): a file naming it is refused whatever the command line says; got %q, %v", k.FileKey(), v, err)
		case want != "never" && (err != nil || v != k.Value(&fromCmd).String()):
			t.Errorf("%s (%s): with --%s on the command line: got %q, %v; want the command line's %q", k.FileKey(), want, k.Flag, v, err, k.Value(&fromCmd).String())
		}
		// The schemas list what a file may name.
		inRun := strings.Contains(runSchema, `"`+k.FileKey()+`": {`)
		if inRun != (want != "never") {
			t.Errorf("%s (%s): in the run file schema: %v", k.FileKey(), want, inRun)
		}
		if want == "never" && strings.Contains(matrixSchema, `"`+k.FileKey()+`": {`) {
			t.Errorf("%s (never): in the matrix file schema", k.FileKey())
		}
		// A matrix file: the same rule.
		if want != "file" {
			if _, err := Parse([]byte(file), "m.yaml", Matrix); want == "never" && (err == nil || !errors.Is(err, ErrFile)) {
				t.Errorf("%s (never): a matrix file naming it: %v; want refused", k.FileKey(), err)
			}
		}
	}
}
