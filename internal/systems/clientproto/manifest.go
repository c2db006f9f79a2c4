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
	"slices"
	"strings"
	"sync"

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
	// default --target); Targets, in its place, names several, for a
	// program that serves more than one (a library with a backend for
	// each): matrix runs the program on each (Manifest.TargetNames).
	Target  string   `json:"target,omitempty"`
	Targets []string `json:"targets,omitempty"`
	// Tokens, when false, declares that the program's grants never carry
	// a fencing token (init_ok's "tokens" is always false), so that a run
	// with --fencing token is refused before anything starts (CheckFencing)
	// instead of at the workers' setup. Absent: the program says at init.
	Tokens *bool `json:"tokens,omitempty"`
}

// ErrNoTokens: a client program that declares its grants carry no
// fencing token (client.json's "tokens": false) was asked to run with
// token fencing. An error that is one is also targets.ErrBadConfig.
var ErrNoTokens = errors.New("a client program without fencing tokens under token fencing")

// noTokens is CheckFencing's error: ErrNoTokens and targets.ErrBadConfig.
type noTokens struct{ msg string }

func (e noTokens) Error() string { return e.msg }

func (e noTokens) Is(target error) bool {
	return target == ErrNoTokens || target == targets.ErrBadConfig
}

// TargetNames are the lock services the program is written for:
// "targets", else "target" alone, else none (any target).
func (m Manifest) TargetNames() []string {
	if m.Targets != nil {
		return m.Targets
	}
	if m.Target != "" {
		return []string{m.Target}
	}
	return nil
}

// Tokenless reports whether client.json declares that the program's
// grants carry no fencing token.
func (m Manifest) Tokenless() bool { return m.Tokens != nil && !*m.Tokens }

// CheckFencing checks, before anything starts, that the program can run
// with each resource's fencing mode (fencings, by resource; fencing is
// --fencing as given, for the message): one that declares its grants
// carry no token cannot run where a resource applies token fencing. What
// the program says at init is checked again by Dial (Client.Fits). Errors
// are ErrNoTokens and targets.ErrBadConfig.
func (s ProgramDir) CheckFencing(fencing string, fencings map[string]targets.Fencing) error {
	if !s.Manifest.Tokenless() {
		return nil
	}
	for _, f := range fencings {
		if f.Applied() == targets.FencingToken {
			return noTokens{fmt.Sprintf("%v: --client-dir %s: the client program %q declares that its grants carry no fencing token (%s: \"tokens\": false), so it cannot run with --fencing %s",
				targets.ErrBadConfig, s.HostDir, s.Name(), ManifestFile, fencing)}
		}
	}
	return nil
}

// ProgramDir is a client to run: its directory on this machine, its manifest,
// and how the worker starts it.
type ProgramDir struct {
	HostDir  string
	Manifest Manifest
	Program  Program
}

var packageName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

// Load reads DIR/client.json. cmd, when not empty, overrides its command
// (run with /bin/sh -c); image, when not empty, its image. Errors wrap
// targets.ErrBadConfig.
func Load(dir, cmd, image string) (ProgramDir, error) {
	bad := func(format string, args ...any) (ProgramDir, error) {
		return ProgramDir{}, fmt.Errorf("%w: client %s: %s", targets.ErrBadConfig, dir, fmt.Sprintf(format, args...))
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
	if m.Target != "" && m.Targets != nil {
		return bad("%s: \"target\" and \"targets\" both given: name one target, or list them all under \"targets\"", ManifestFile)
	}
	if m.Targets != nil && len(m.Targets) == 0 {
		return bad("%s: \"targets\" is an empty list", ManifestFile)
	}
	for i, t := range m.Targets {
		if t == "" || slices.Contains(m.Targets[:i], t) {
			return bad("%s: \"targets\": %q is empty or given twice", ManifestFile, t)
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
	return ProgramDir{HostDir: abs, Manifest: m, Program: prog}, nil
}

// Name is the client's name: the manifest's, else the directory's.
func (s ProgramDir) Name() string {
	if s.Manifest.Name != "" {
		return s.Manifest.Name
	}
	return filepath.Base(s.HostDir)
}

// RunBuild runs the manifest's build command in the directory, its output
// to out. No build command: nothing to do.
func (s ProgramDir) RunBuild(ctx context.Context, out io.Writer) error {
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

// clientBuilds remembers the client builds this process ran (by directory
// and command) and how they ended: a matrix builds each client once, not
// once a cell.
var clientBuilds sync.Map // string -> func() error

// BuildOnce runs s's build step unless this process already ran
// it (or it has none), and returns its result.
func (s ProgramDir) BuildOnce(stderr io.Writer) error {
	if s.Manifest.Build == "" {
		return nil
	}
	key := s.HostDir + "\x00" + s.Manifest.Build
	once, _ := clientBuilds.LoadOrStore(key, sync.OnceValue(func() error {
		fmt.Fprintf(stderr, "fencecheck: building the client: %s\n", s.Manifest.Build)
		return s.RunBuild(context.Background(), stderr)
	}))
	return once.(func() error)()
}

// Files reads the directory's regular files (what is copied into the
// image), by path relative to it, with their modes. Directories named .git
// are skipped. More than limit bytes in all is an error.
func (s ProgramDir) Files(limit int64) (map[string]File, error) {
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
