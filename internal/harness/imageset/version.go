package imageset

import (
	"fmt"
	"io"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/buildinfo"
)

// Version prints this binary's module version, VCS revision and commit
// time, Go version, worker (the binary its worker image holds, in words)
// and the tags of the images it builds, built or not (Tags): fencecheck
// version. It needs no engine.
func (s Set) Version(stdout io.Writer, worker string) error {
	b := buildinfo.Read()
	fmt.Fprintf(stdout, "fencecheck %s\n", b.Version)
	if b.Revision == "" {
		fmt.Fprintln(stdout, "revision   unknown (built without VCS information)")
	} else {
		fmt.Fprintf(stdout, "revision   %s\n", b.RevisionString())
		if !b.Time.IsZero() {
			fmt.Fprintf(stdout, "committed  %s\n", b.Time.UTC().Format(time.RFC3339))
		}
	}
	fmt.Fprintf(stdout, "go         %s\n", b.Go)
	fmt.Fprintf(stdout, "worker     %s\n", worker)
	refs, err := s.Tags(nil)
	for i, ref := range refs {
		label := "images    "
		if i > 0 {
			label = "          "
		}
		fmt.Fprintf(stdout, "%s %s\n", label, ref)
	}
	return err
}
