package buildinfo

import (
	"runtime/debug"
	"testing"
	"time"
)

func TestFromSettings(t *testing.T) {
	rev := "a2d1e3da438c6fcd825e32b23e6255b903f6dcea"
	stamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261204220931-a2d1e3da438c+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-12-04T22:09:31Z"}, {Key: "vcs.modified", Value: "true"}}}
	i := fromSettings(stamped)
	if i.Revision != rev || !i.Modified || i.Go != "go1.26.8" || !i.Time.Equal(time.Date(2026, 12, 4, 22, 9, 31, 0, time.UTC)) {
		t.Errorf("stamped: %+v", i)
	}
	if got := i.RevisionString(); got != rev+"+modified" {
		t.Errorf("RevisionString %q", got)
	}
	if got := i.String(); got != "v0.0.0-20261204220931-a2d1e3da438c+dirty" {
		t.Errorf("String %q: a pseudo-version holding the revision stands alone", got)
	}

	// No vcs settings: the linker's variables (make build in a worktree).
	defer func(r, tm, m string) { revision, revisionTime, modified = r, tm, m }(revision, revisionTime, modified)
	revision, revisionTime, modified = rev, "2026-12-04T22:09:31Z", "false"
	i = fromSettings(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}})
	if i.Revision != rev || i.Modified || i.Time.IsZero() {
		t.Errorf("from the linker: %+v", i)
	}
	if got := i.String(); got != "(devel) a2d1e3da438c" {
		t.Errorf("String %q", got)
	}
	// The go command's own settings win over the linker's.
	stamped.Settings[1].Value = "b" + rev[1:]
	if i := fromSettings(stamped); i.Revision != stamped.Settings[1].Value {
		t.Errorf("the go command's revision lost to the linker's: %+v", i)
	}

	// No vcs settings, a pseudo-version: go install MODULE@COMMIT.
	revision = ""
	for v, want := range map[string]string{
		"v0.0.0-20261204220931-a2d1e3da438c":                    "a2d1e3da438c",
		"v1.2.1-0.20261204220931-a2d1e3da438c":                  "a2d1e3da438c",
		"v2.0.0-pre.0.20261204220931-a2d1e3da438c+incompatible": "a2d1e3da438c",
		"v1.2.0": "", "(devel)": "", "v0.0.0-2026120422093-a2d1e3da438c": "",
		"v1.2.3-rc.20261204220931-a2d1e3da438c": "", "v1.2.0-20261204220931-a2d1e3da438c": "",
	} {
		i := fromSettings(&debug.BuildInfo{Main: debug.Module{Version: v}})
		if i.Revision != want || (want != "" && !i.Time.Equal(time.Date(2026, 12, 4, 22, 9, 31, 0, time.UTC))) {
			t.Errorf("%s: revision %q at %v, want %q", v, i.Revision, i.Time, want)
		}
		if want != "" && i.String() != v {
			t.Errorf("%s: String %q", v, i.String())
		}
	}

	// Neither: a go install of a release.
	revision = ""
	i = fromSettings(&debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}})
	if i.String() != "v1.2.0" || i.RevisionString() != "" {
		t.Errorf("release: %+v", i)
	}
}
