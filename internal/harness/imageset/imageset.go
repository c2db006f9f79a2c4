// Package imageset is the images fencecheck keeps on an engine and in
// archives, as the images verb drives them: build what is missing (and
// client programs' images), list them with the versions each target can
// run, prune those this binary does not use, build a scratch server
// image, save them to a CI cache directory and load them back, and print
// their tags without an engine.
package imageset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/cmdline"
	"github.com/fencecheck/fencecheck/internal/base/images"
	"github.com/fencecheck/fencecheck/internal/base/platform/docker"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/systems/clientproto"
	"github.com/fencecheck/fencecheck/targets"
)

// Set is the images of one fencecheck binary: its targets (the built-in
// ones and a Go API user's) and its worker binary.
type Set struct {
	Targets []targets.Target
	// WorkerBinary is the binary the worker image holds.
	WorkerBinary func() (string, error)
}

// KindNames lists the image kinds, comma-separated (images.Kinds).
func KindNames() string { return strings.Join(images.Kinds, ", ") }

// Command is one images command: Verb is build, scratch, list, prune,
// tags, save or load; Kinds the KIND[@VERSION]s it names (save and load:
// the one directory); Verbose shows the builds' output; AllVersions and
// ClientDirs go with build.
type Command struct {
	Verb        string
	Kinds       []string
	Verbose     bool
	AllVersions bool
	ClientDirs  []string
}

// Run runs c, its results on stdout and its progress on stderr. A bad
// verb, kind or archive is an error that wraps cmdline.ErrUsage (exit
// 254) and touches no engine (but for load's archives, all read first);
// an engine's failure wraps harness.ErrHarness.
func (s Set) Run(ctx context.Context, c Command, stdout, stderr io.Writer) error {
	verb, kinds := c.Verb, slices.Clone(c.Kinds)
	if (len(c.ClientDirs) > 0 || c.AllVersions) && verb != "build" {
		return fmt.Errorf("%w: --client-dir and --all-versions go with images build", cmdline.ErrUsage)
	}
	if c.AllVersions {
		kinds = WithAllVersions(kinds)
	}
	if verb == "tags" {
		return s.printTags(kinds, stdout)
	}
	if verb == "save" || verb == "load" {
		if len(kinds) == 0 || kinds[0] == "" || (verb == "load" && len(kinds) != 1) {
			return fmt.Errorf("%w: images %s takes one directory (save: and the KIND[@VERSION]s to save)", cmdline.ErrUsage, verb)
		}
		for _, k := range kinds[1:] {
			if err := images.CheckKind(k); err != nil {
				return fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
			}
		}
		return s.archive(ctx, verb, kinds[0], kinds[1:], stdout, stderr)
	}
	if err := checkKinds(verb, kinds); err != nil {
		return err
	}
	eng, err := docker.Connect(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	defer eng.Close()
	workerBin, err := s.WorkerBinary()
	if err != nil {
		return err
	}
	b := &images.Builder{Engine: eng, Log: func(f string, a ...any) { fmt.Fprintf(stderr, "fencecheck: "+f+"\n", a...) }}
	if c.Verbose {
		b.Output = stderr
	}
	if verb == "scratch" {
		for _, k := range kinds {
			ref, err := b.BuildScratch(ctx, k)
			if err != nil {
				return fmt.Errorf("%w: %w", harness.ErrHarness, err)
			}
			fmt.Fprintln(stdout, ref)
		}
		return nil
	}
	if verb == "prune" {
		return prune(ctx, eng, workerBin, stdout)
	}
	if verb == "list" {
		return s.list(ctx, eng, workerBin, stdout)
	}
	start := time.Now()
	if len(c.ClientDirs) == 0 || len(kinds) > 0 {
		// Every kind at once, overlapped: etcd (any version) compiles
		// while debootstrap makes the base.
		refs, err := b.EnsureAll(ctx, workerBin, kinds...)
		if err != nil {
			return fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
		for _, ref := range refs {
			fmt.Fprintln(stdout, ref)
		}
	}
	if len(c.ClientDirs) > 0 {
		if err := s.buildClients(ctx, b, workerBin, c.ClientDirs, stdout, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "fencecheck: images ready in %.1fs\n", time.Since(start).Seconds())
	return nil
}

// printTags prints the tags Tags computes, one a line.
func (s Set) printTags(kinds []string, stdout io.Writer) error {
	refs, err := s.Tags(kinds)
	for _, ref := range refs {
		fmt.Fprintln(stdout, ref)
	}
	return err
}

// checkKinds checks images' verb and the kinds it names (exit 254).
func checkKinds(verb string, kinds []string) error {
	if (verb != "build" && verb != "scratch" && len(kinds) > 0) || (verb != "build" && verb != "scratch" && verb != "list" && verb != "prune") {
		return fmt.Errorf("%w: images takes build, scratch, list, prune, tags, save DIR or load DIR (build, scratch and tags name KIND[@VERSION]...)", cmdline.ErrUsage)
	}
	if verb == "scratch" && len(kinds) == 0 {
		return fmt.Errorf("%w: images scratch names the server: etcd, etcd@VERSION or consul", cmdline.ErrUsage)
	}
	if verb == "scratch" {
		for _, k := range kinds {
			if err := images.CheckScratch(k); err != nil {
				return fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
			}
		}
	}
	for _, k := range kinds {
		if err := images.CheckKind(k); err != nil {
			return fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
		}
	}
	return nil
}

// prune removes fencecheck's images that this binary does not use
// (images prune).
func prune(ctx context.Context, eng *docker.Engine, workerBin string, stdout io.Writer) error {
	removed, err := images.Prune(ctx, eng, workerBin)
	for _, r := range removed {
		fmt.Fprintln(stdout, "removed", r)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	fmt.Fprintf(stdout, "removed %d images\n", len(removed))
	return nil
}

// list lists fencecheck's images and the versions each target can
// run (images list).
func (s Set) list(ctx context.Context, eng *docker.Engine, workerBin string, stdout io.Writer) error {
	list, err := images.List(ctx, eng, workerBin)
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tIMAGE\tKIND\tSIZE\tCREATED")
	for _, i := range list {
		mark := ""
		if i.Current {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f MB\t%s\n", mark, i.Ref, i.Kind, float64(i.Size)/1e6, i.Created.Format(time.DateTime))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return s.listVersions(ctx, stdout, &images.Builder{Engine: eng})
}

// listVersions prints the versions each target can run (--version): the
// version, the server it reports, its image and whether that is built.
func (s Set) listVersions(ctx context.Context, w io.Writer, b *images.Builder) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTARGET\t--version\tSERVER\tIMAGE\tBUILT\tSOURCE")
	for _, t := range s.Targets {
		vt, ok := t.(targets.Versioned)
		if !ok {
			continue
		}
		for i, name := range vt.Versions() {
			kind, _ := images.SplitKind(vt.WithVersion(name).Image())
			v, _ := images.LookupVersion(kind, name)
			ref, err := images.VersionRef(kind, name)
			if err != nil {
				return err
			}
			built, err := b.Exists(ctx, ref)
			if err != nil {
				return fmt.Errorf("%w: %w", harness.ErrHarness, err)
			}
			label := name
			if i == 0 {
				label += " (default)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name(), label, v.Server, ref, yesNo(built), v.Source)
		}
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no (built on first use)"
}

// archive is images save and images load: the images of kinds (each
// must be built), or with none every image this binary uses that is
// built, to DIR's archives; or DIR's archives to the Engine.
func (s Set) archive(ctx context.Context, verb, dir string, kinds []string, stdout, stderr io.Writer) error {
	if verb == "load" {
		// Every archive is read before the Engine is reached: a bad
		// one is bad input (254), and nothing is loaded.
		if _, err := images.CheckDir(dir); errors.Is(err, images.ErrBadArchive) {
			return fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
		}
	}
	eng, err := docker.Connect(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	defer eng.Close()
	logf := func(f string, a ...any) { fmt.Fprintf(stderr, "fencecheck: "+f+"\n", a...) }
	start := time.Now()
	if verb == "load" {
		res, err := images.Load(ctx, eng, dir, logf)
		for _, r := range res.Loaded {
			fmt.Fprintln(stdout, "loaded", r)
		}
		if errors.Is(err, images.ErrBadArchive) {
			return fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
		}
		if err != nil {
			return fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
		fmt.Fprintf(stderr, "fencecheck: %d images loaded, %d there already, in %.1fs\n", len(res.Loaded), len(res.Present), time.Since(start).Seconds())
		return nil
	}
	workerBin, err := s.WorkerBinary()
	if err != nil {
		return err
	}
	var res images.SaveResult
	if len(kinds) > 0 {
		res, err = images.SaveKinds(ctx, eng, dir, kinds, workerBin, logf)
	} else {
		list, lerr := images.List(ctx, eng, workerBin)
		if lerr != nil {
			return fmt.Errorf("%w: %w", harness.ErrHarness, lerr)
		}
		var refs []string
		for _, i := range list {
			if i.Current {
				refs = append(refs, i.Ref)
			}
		}
		if len(refs) == 0 {
			return fmt.Errorf("%w: no image of this binary is built (fencecheck images build first)", harness.ErrHarness)
		}
		res, err = images.Save(ctx, eng, dir, refs, logf)
	}
	for _, p := range res.Written {
		fmt.Fprintln(stdout, "wrote", p)
	}
	for _, p := range res.Removed {
		fmt.Fprintln(stdout, "removed", p)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	fmt.Fprintf(stderr, "fencecheck: %d archives written, %d there already, %d older removed, in %.1fs\n", len(res.Written), len(res.Kept), len(res.Removed), time.Since(start).Seconds())
	return nil
}

// buildClients builds the image of each client program in dirs, one
// after another (a client's packages and its image_build step load the
// machine; side by side they would slow each other and whatever else
// runs), each after its host build step, and prints each tag.
func (s Set) buildClients(ctx context.Context, b *images.Builder, workerBin string, dirs []string, stdout, stderr io.Writer) error {
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		prog, err := clientproto.Load(dir, "", "")
		if err != nil {
			return err
		}
		if err := prog.BuildOnce(stderr); err != nil {
			return err
		}
		ci, err := harness.ClientImageOf(prog)
		if err != nil {
			return err
		}
		start := time.Now()
		ref, err := b.EnsureClient(ctx, workerBin, ci)
		if err != nil {
			return fmt.Errorf("%w: client %s: %w", harness.ErrHarness, dir, err)
		}
		fmt.Fprintf(stderr, "fencecheck: client %s: %s in %.1fs\n", prog.Name(), ref, time.Since(start).Seconds())
		fmt.Fprintln(stdout, ref)
	}
	return nil
}

// Tags are the tags of the images of kinds, built or not (no
// Engine): by default, build's kinds but the worker, which is rebuilt in
// seconds and changes with every build of fencecheck. images tags prints
// them (a CI cache key), and so does version.
func (s Set) Tags(kinds []string) ([]string, error) {
	if len(kinds) == 0 {
		kinds = slices.DeleteFunc(slices.Clone(images.DefaultKinds), func(k string) bool { return k == images.Worker })
		if !slices.Contains(kinds, images.Base) {
			kinds = append([]string{images.Base}, kinds...)
		}
	}
	var refs []string
	for _, k := range kinds {
		if err := images.CheckKind(k); err != nil {
			return refs, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
		}
		bin := ""
		if k == images.Worker {
			var err error
			if bin, err = s.WorkerBinary(); err != nil {
				return refs, err
			}
		}
		ref, err := images.Ref(k, bin)
		if err != nil {
			return refs, fmt.Errorf("%w: %w", cmdline.ErrUsage, err)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// WithAllVersions is kinds (DefaultKinds when empty) followed by every
// other version of each, as KIND@VERSION.
func WithAllVersions(kinds []string) []string {
	base := kinds
	if len(base) == 0 {
		base = images.DefaultKinds
	}
	out := slices.Clone(base)
	for _, k := range base {
		kind, name := images.SplitKind(k)
		if name != "" {
			continue
		}
		for i, v := range images.Versions(kind) {
			if i > 0 {
				out = append(out, kind+"@"+v.Name)
			}
		}
	}
	return out
}
