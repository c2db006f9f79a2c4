package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencecheck/fencecheck/internal/clientproto"
	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/images"
	"github.com/fencecheck/fencecheck/internal/platform/docker"
	"github.com/fencecheck/fencecheck/targets"
)

func cmdImages(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := verbFlags("images", stderr, "build  builds what is missing of the base (debootstrap), etcd and consul (from Go source),\n"+
		"       zookeeper (Debian's package) and worker images, each target's default version,\n"+
		"       tagged by content hash; with nothing changed it takes about a second; given\n"+
		"       kinds ("+strings.Join(images.Kinds, ", ")+", or a version: etcd@3.4.3, etcd@debian),\n"+
		"       builds those only, and the base. A run builds what it needs by itself.\n"+
		"       kubernetes (kube-apiserver from Go source, 7 to 13 minutes on 2 cores) is\n"+
		"       built only when named. --client-dir DIR,... builds client programs' images\n"+
		"       (one after another: a CI step before the runs that use them), and only those\n"+
		"       unless kinds are named too. --all-versions builds every version of the kinds\n"+
		"       built (images list shows them), not only the default.\n"+
		"list   lists fencecheck's images (* marks those this binary uses) and the versions\n"+
		"       each target can run (--version), built or not\n"+
		"scratch builds, from the etcd or consul image, one FROM scratch with only the server's\n"+
		"       static binary (no shell, no iptables: like the official distroless images), and\n"+
		"       prints its tag, to try --image target=TAG without a registry\n"+
		"prune  removes fencecheck's images that this binary does not use\n"+
		"save   writes each image this binary uses that is built to DIR, one archive per image\n"+
		"       named by its tag (its content hash): a CI cache directory; archives already\n"+
		"       there are kept (one that load would refuse is written again), those of\n"+
		"       fencecheck's older images removed\n"+
		"load   loads the archives in DIR that the Engine lacks (a warm CI runner: seconds,\n"+
		"       instead of building), once each archive in DIR is a regular file holding the\n"+
		"       image its name says and no other tag (else nothing is loaded: exit 254)\n"+
		"tags   prints the tags of the images build makes (or of the KINDs given), built or\n"+
		"       not, without the Engine: a CI cache key for save's directory\n")
	verbose := fs.Bool("v", false, "show the output of debootstrap and go build")
	allVersions := fs.Bool("all-versions", false, "with build: every version the targets can run (--version) of the kinds built, not only the default (a CI step before tests that run them all)")
	clientDirs := fs.String("client-dir", "", "with build: client programs' directories (comma-separated) whose images to build, one after another, each after its manifest's build step")
	// Flags may follow the verb too: images build --client-dir DIR.
	if err := parseVerb(fs, args); err != nil {
		return err
	}
	verb := "build"
	if fs.NArg() > 0 {
		verb = fs.Arg(0)
	}
	kinds := fs.Args()
	if len(kinds) > 0 {
		kinds = kinds[1:]
	}
	if (*clientDirs != "" || *allVersions) && verb != "build" {
		return fmt.Errorf("%w: --client-dir and --all-versions go with images build", errUsage)
	}
	if *allVersions {
		kinds = withAllVersions(kinds)
	}
	if verb == "tags" {
		return printImageTags(kinds, stdout, stderr)
	}
	if verb == "save" || verb == "load" {
		if len(kinds) != 1 || kinds[0] == "" {
			return fmt.Errorf("%w: images %s takes one directory", errUsage, verb)
		}
		return archiveImages(ctx, verb, kinds[0], stdout, stderr)
	}
	if err := checkImageKinds(verb, kinds); err != nil {
		return err
	}
	eng, err := docker.Connect(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	defer eng.Close()
	workerBin, err := workerBinary(stderr)
	if err != nil {
		return err
	}
	b := &images.Builder{Engine: eng, Log: func(f string, a ...any) { fmt.Fprintf(stderr, "fencecheck: "+f+"\n", a...) }}
	if *verbose {
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
		return pruneImages(ctx, eng, workerBin, stdout)
	}
	if verb == "list" {
		return listImages(ctx, eng, workerBin, stdout)
	}
	start := time.Now()
	if *clientDirs == "" || len(kinds) > 0 {
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
	if *clientDirs != "" {
		if err := buildClientImages(ctx, b, workerBin, strings.Split(*clientDirs, ","), stdout, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "fencecheck: images ready in %.1fs\n", time.Since(start).Seconds())
	return nil
}

// printImageTags prints the tags images tags computes, one a line.
func printImageTags(kinds []string, stdout, stderr io.Writer) error {
	refs, err := imageTags(kinds, stderr)
	for _, ref := range refs {
		fmt.Fprintln(stdout, ref)
	}
	return err
}

// checkImageKinds checks images' verb and the kinds it names (exit 254).
func checkImageKinds(verb string, kinds []string) error {
	if (verb != "build" && verb != "scratch" && len(kinds) > 0) || (verb != "build" && verb != "scratch" && verb != "list" && verb != "prune") {
		return fmt.Errorf("%w: images takes build, scratch, list, prune, tags, save DIR or load DIR (build, scratch and tags name KIND[@VERSION]...)", errUsage)
	}
	if verb == "scratch" && len(kinds) == 0 {
		return fmt.Errorf("%w: images scratch names the server: etcd, etcd@VERSION or consul", errUsage)
	}
	if verb == "scratch" {
		for _, k := range kinds {
			if err := images.CheckScratch(k); err != nil {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
		}
	}
	for _, k := range kinds {
		if err := images.CheckKind(k); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	return nil
}

// pruneImages removes fencecheck's images that this binary does not use
// (images prune).
func pruneImages(ctx context.Context, eng *docker.Engine, workerBin string, stdout io.Writer) error {
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

// listImages lists fencecheck's images and the versions each target can
// run (images list).
func listImages(ctx context.Context, eng *docker.Engine, workerBin string, stdout io.Writer) error {
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
	return listVersions(ctx, stdout, &images.Builder{Engine: eng})
}

// listVersions prints the versions each target can run (--version): the
// version, the server it reports, its image and whether that is built.
func listVersions(ctx context.Context, w io.Writer, b *images.Builder) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTARGET\t--version\tSERVER\tIMAGE\tBUILT\tSOURCE")
	for _, t := range targetTable {
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

// archiveImages is images save and images load: the images this binary
// uses (those built) to DIR's archives, or DIR's archives to the Engine.
func archiveImages(ctx context.Context, verb, dir string, stdout, stderr io.Writer) error {
	if verb == "load" {
		// Every archive is read before the Engine is reached: a bad
		// one is bad input (254), and nothing is loaded.
		if _, err := images.CheckDir(dir); errors.Is(err, images.ErrBadArchive) {
			return fmt.Errorf("%w: %w", errUsage, err)
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
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		if err != nil {
			return fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
		fmt.Fprintf(stderr, "fencecheck: %d images loaded, %d there already, in %.1fs\n", len(res.Loaded), len(res.Present), time.Since(start).Seconds())
		return nil
	}
	workerBin, err := workerBinary(stderr)
	if err != nil {
		return err
	}
	list, err := images.List(ctx, eng, workerBin)
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
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
	res, err := images.Save(ctx, eng, dir, refs, logf)
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

// buildClientImages builds the image of each client program in dirs, one
// after another (a client's packages and its image_build step load the
// machine; side by side they would slow each other and whatever else
// runs), each after its host build step, and prints each tag.
func buildClientImages(ctx context.Context, b *images.Builder, workerBin string, dirs []string, stdout, stderr io.Writer) error {
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		prog, err := clientproto.Load(dir, "", "")
		if err != nil {
			return err
		}
		if err := buildClientOnce(prog, stderr); err != nil {
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

// withAllVersions is kinds (DefaultKinds when empty) followed by every
// other version of each, as KIND@VERSION.
// imageTags are the tags of the images of kinds, built or not (no
// Engine): by default, build's kinds but the worker, which is rebuilt in
// seconds and changes with every build of fencecheck. images tags prints
// them (a CI cache key), and so does version.
func imageTags(kinds []string, stderr io.Writer) ([]string, error) {
	if len(kinds) == 0 {
		kinds = slices.DeleteFunc(slices.Clone(images.DefaultKinds), func(k string) bool { return k == images.Worker })
		if !slices.Contains(kinds, images.Base) {
			kinds = append([]string{images.Base}, kinds...)
		}
	}
	var refs []string
	for _, k := range kinds {
		if err := images.CheckKind(k); err != nil {
			return refs, fmt.Errorf("%w: %w", errUsage, err)
		}
		bin := ""
		if k == images.Worker {
			var err error
			if bin, err = workerBinary(stderr); err != nil {
				return refs, err
			}
		}
		ref, err := images.Ref(k, bin)
		if err != nil {
			return refs, fmt.Errorf("%w: %w", errUsage, err)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

func withAllVersions(kinds []string) []string {
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
