package clientproto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/fencecheck/fencecheck/targets"
)

// ManifestFile is the manifest's name in a client directory.
const ManifestFile = "client.json"

// Dir is where a client directory is copied in the worker's image; the
// program runs there.
const Dir = "/client"

// Manifest is a client directory's client.json: how to start the program
// and what it needs.
type Manifest struct {
	// Protocol is the protocol version the program speaks (1).
	Protocol int `json:"protocol"`
	// Name names the client in the report ("redis-py Lock").
	Name string `json:"name,omitempty"`
	// Command is the program's argv, run in the directory's copy.
	Command []string `json:"command"`
	// Packages are Debian packages the program needs, installed in the
	// client's image by apt.
	Packages []string `json:"packages,omitempty"`
	// Image is an image of the user's to run the program in instead of
	// fencecheck's worker image (the harness adds its worker binary to it).
	Image string `json:"image,omitempty"`
	// Build is a shell command run on this machine in the directory before
	// it is copied (a compile step: "CGO_ENABLED=0 go build -o client .").
	Build string `json:"build,omitempty"`
	// ImageBuild is a shell command run in /client while the client's image
	// is built, after its packages are installed and its files copied (a
	// compile step whose toolchain comes from the packages: "javac ...").
	// Its output is in the image; it runs again only when the image changes.
	ImageBuild string `json:"image_build,omitempty"`
	// Target is the lock service the client is written for (client-check's
	// default --target).
	Target string `json:"target,omitempty"`
}

// Spec is a client to run: its directory on this machine, its manifest,
// and how the worker starts it.
type Spec struct {
	HostDir  string
	Manifest Manifest
	Program  Program
}

var packageName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

// Load reads DIR/client.json. cmd, when not empty, overrides its command
// (run with /bin/sh -c); image, when not empty, its image. Errors wrap
// targets.ErrBadConfig.
func Load(dir, cmd, image string) (Spec, error) {
	bad := func(format string, args ...any) (Spec, error) {
		return Spec{}, fmt.Errorf("%w: client %s: %s", targets.ErrBadConfig, dir, fmt.Sprintf(format, args...))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return bad("%v", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return bad("%v", err)
	}
	if !st.IsDir() {
		return bad("not a directory")
	}
	var m Manifest
	b, err := os.ReadFile(filepath.Join(abs, ManifestFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		if cmd == "" {
			return bad("no %s, and no --client-cmd", ManifestFile)
		}
		m.Protocol = Version
	case err != nil:
		return bad("%v", err)
	default:
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return bad("%s: %v", ManifestFile, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return bad("%s: more after the object (one JSON object, nothing after it)", ManifestFile)
		}
	}
	if m.Protocol != Version {
		return bad("%s: protocol %d (this fencecheck speaks %d)", ManifestFile, m.Protocol, Version)
	}
	for _, p := range m.Packages {
		if !packageName.MatchString(p) {
			return bad("%s: %q is not a Debian package name", ManifestFile, p)
		}
	}
	if image != "" {
		m.Image = image
	}
	if m.Image != "" && strings.ContainsAny(m.Image, " \t\n") {
		return bad("image %q", m.Image)
	}
	prog := Program{Cmd: m.Command, Dir: Dir}
	if cmd != "" {
		prog = Program{Cmd: []string{cmd}, Shell: true, Dir: Dir}
	}
	if len(prog.Cmd) == 0 || prog.Cmd[0] == "" {
		return bad("%s has no command (and no --client-cmd)", ManifestFile)
	}
	return Spec{HostDir: abs, Manifest: m, Program: prog}, nil
}

// Name is the client's name: the manifest's, else the directory's.
func (s Spec) Name() string {
	if s.Manifest.Name != "" {
		return s.Manifest.Name
	}
	return filepath.Base(s.HostDir)
}

// RunBuild runs the manifest's build command in the directory, its output
// to out. No build command: nothing to do.
func (s Spec) RunBuild(ctx context.Context, out io.Writer) error {
	if s.Manifest.Build == "" {
		return nil
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", s.Manifest.Build)
	cmd.Dir = s.HostDir
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: client %s: build %q: %v", targets.ErrBadConfig, s.HostDir, s.Manifest.Build, err)
	}
	return nil
}

// Files reads the directory's regular files (what is copied into the
// image), by path relative to it, with their modes. Directories named .git
// are skipped. More than limit bytes in all is an error.
func (s Spec) Files(limit int64) (map[string]File, error) {
	files := map[string]File{}
	var total int64
	err := filepath.WalkDir(s.HostDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		total += info.Size()
		if total > limit {
			return fmt.Errorf("more than %d MB of files", limit>>20)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.HostDir, path)
		files[filepath.ToSlash(rel)] = File{Data: b, Mode: int64(info.Mode().Perm())}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: client %s: %v", targets.ErrBadConfig, s.HostDir, err)
	}
	return files, nil
}

// File is one file of a client directory.
type File struct {
	Data []byte
	Mode int64
}
