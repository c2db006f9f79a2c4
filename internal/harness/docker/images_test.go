package docker

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/runtime"
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
