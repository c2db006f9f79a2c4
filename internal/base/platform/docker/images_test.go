package docker

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// A failed build's error carries the last lines it printed (a failed RUN's
// output, such as a compiler's errors), not only the Engine's one line.
func TestBuildStreamErrorCarriesOutput(t *testing.T) {
	stream := `{"stream":"Step 5/7 : RUN javac Lock.java\n"}
{"stream":"Lock.java:3: error: ';' expected\n"}
{"errorDetail":{"message":"returned a non-zero code: 1"},"error":"The command returned a non-zero code: 1"}
`
	err := readBuildStream(strings.NewReader(stream))
	if err == nil || !strings.Contains(err.Error(), "Lock.java:3: error: ';' expected") || !strings.Contains(err.Error(), "non-zero code: 1") {
		t.Fatalf("error %v lacks the build's output", err)
	}
	if err := readBuildStream(strings.NewReader(`{"stream":"Successfully built 1234\n"}`)); err != nil {
		t.Fatalf("a build without an error: %v", err)
	}
}

// A load's answer names what the Engine loaded: each tag, and the ID of an
// image loaded without one (Docker 20.10's lines, as it wrote them for an
// archive with two tags, and one with none); the Engine's error ends it,
// with what it had loaded by then.
func TestLoadStreamNamesWhatWasLoaded(t *testing.T) {
	stream := `{"stream":"Loaded image: fencecheck/h38b-exp:one\n"}
{"stream":"Loaded image: fencecheck/h38b-exp:two\n"}
{"stream":"Loaded image ID: sha256:d850fd6a89a5fb8e3a748151e752d0d360552f503ef0d2dc84f6cbca0fee57bb\n"}
`
	got, err := readLoadStream(strings.NewReader(stream))
	want := []string{"fencecheck/h38b-exp:one", "fencecheck/h38b-exp:two", "sha256:d850fd6a89a5fb8e3a748151e752d0d360552f503ef0d2dc84f6cbca0fee57bb"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("readLoadStream = %q, %v; want %q", got, err, want)
	}
	stream = `{"stream":"Loaded image: fencecheck/h38b-exp:one\n"}
{"errorDetail":{"message":"open /var/lib/docker/tmp/docker-import-1/repositories: no such file or directory"},"error":"open /var/lib/docker/tmp/docker-import-1/repositories: no such file or directory"}
`
	got, err = readLoadStream(strings.NewReader(stream))
	if err == nil || !strings.Contains(err.Error(), "repositories") || !slices.Equal(got, want[:1]) {
		t.Errorf("readLoadStream of an error = %q, %v", got, err)
	}
}

// The Engine's not-found error keeps its message and is also the sentinel
// callers test for.
func TestNotFoundIsTheSentinel(t *testing.T) {
	engine := errors.New("Error response from daemon: No such image: x:1")
	for _, sentinel := range []error{runtime.ErrImageNotFound, fs.ErrNotExist} {
		err := notFound{engine, sentinel}
		if err.Error() != engine.Error() || !errors.Is(err, sentinel) || !errors.Is(err, engine) {
			t.Errorf("notFound{%v}: %q, is sentinel %v, is engine's %v", sentinel, err, errors.Is(err, sentinel), errors.Is(err, engine))
		}
	}
}
