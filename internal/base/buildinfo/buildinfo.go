// Package buildinfo says which fencecheck this is: the module version, the
// VCS revision it was built from, and the Go version, as `fencecheck
// version` prints them and test.json, results.json and the reports record
// them.
//
// The go command records the revision itself (debug.ReadBuildInfo's vcs.*
// settings) when it builds in a git checkout, unless -buildvcs=false. It
// cannot in a git worktree (its .git is a file, which the go command does
// not take for a repository) or with -buildvcs=false in GOFLAGS, so `make
// build` also passes what git says through -ldflags -X (the variables
// below); the go command's own settings win when both are there. A binary
// installed with `go install MODULE@VERSION` has no vcs.* settings: a
// pseudo-version names its revision's first 12 characters and its commit
// time, which Read takes from it; a release tag names no revision.
package buildinfo

import (
	"regexp"
	"runtime/debug"
	"strings"
	"time"
)

// Set by -ldflags -X (the Makefile's build): git's revision of HEAD, its
// commit time (RFC 3339) and "true" when the tree had changes.
var (
	revision     string
	revisionTime string
	modified     string
)

// Info is a build of fencecheck.
type Info struct {
	// Version is the main module's version: a release tag, a
	// pseudo-version (v0.0.0-TIME-REVISION, +dirty when modified) when
	// the go command stamped a checkout, "(devel)" for a source build
	// without VCS information.
	Version string
	// Revision is the VCS revision (a full git hash; its first 12
	// characters when only a pseudo-version names it), empty when unknown;
	// Time its commit time, Modified whether the tree had changes.
	Revision string
	Time     time.Time
	Modified bool
	// Go is the Go version that built the binary.
	Go string
}

// Read is this binary's Info.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fromLinker(Info{Version: "unknown"})
	}
	return fromSettings(bi)
}

// fromSettings reads the build info's module version and vcs.* settings,
// falling back on the linker's variables for what it lacks.
func fromSettings(bi *debug.BuildInfo) Info {
	i := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	vcs := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision, vcs = s.Value, true
		case "vcs.time":
			i.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	if vcs {
		return i
	}
	i = fromLinker(i)
	if i.Revision == "" {
		i.Revision, i.Time = fromPseudo(i.Version)
	}
	return i
}

// pseudo is a pseudo-version's tail, in its three forms (vX.0.0-TIME-REV,
// vX.Y.Z-0.TIME-REV, vX.Y.Z-PRE.0.TIME-REV), before "+incompatible" or
// "+dirty".
var pseudo = regexp.MustCompile(`(?:^v[0-9]+\.0\.0-|-0\.|\.0\.)([0-9]{14})-([0-9a-f]{12})(?:\+incompatible)?(?:\+dirty)?$`)

// fromPseudo is the revision (its first 12 characters) and commit time a
// pseudo-version names (v0.0.0-20261204220931-a2d1e3da438c); none for
// any other version.
func fromPseudo(v string) (string, time.Time) {
	m := pseudo.FindStringSubmatch(v)
	if m == nil {
		return "", time.Time{}
	}
	ts, err := time.Parse("20060102150405", m[1])
	if err != nil {
		return "", time.Time{}
	}
	return m[2], ts
}

func fromLinker(i Info) Info {
	if revision == "" {
		return i
	}
	i.Revision = revision
	i.Time, _ = time.Parse(time.RFC3339, revisionTime)
	i.Modified = modified == "true"
	return i
}

// RevisionString is the revision as test.json and the reports record it:
// the hash, "+modified" after it when the tree had changes; empty when
// unknown.
func (i Info) RevisionString() string {
	if i.Revision == "" {
		return ""
	}
	if i.Modified {
		return i.Revision + "+modified"
	}
	return i.Revision
}

// String is the version and the revision's first 12 characters on one
// line: "(devel) a2d1e3da438c+modified", "v1.2.0"; a pseudo-version that
// holds the revision already stands alone.
func (i Info) String() string {
	r := i.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	if r == "" || strings.Contains(i.Version, r) {
		return i.Version
	}
	if i.Modified {
		r += "+modified"
	}
	return i.Version + " " + r
}
