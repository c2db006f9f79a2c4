package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fencecheck/fencecheck/internal/harness"
	"github.com/fencecheck/fencecheck/internal/harness/docker"
	"github.com/fencecheck/fencecheck/internal/images"
)

func cmdImages(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("images", stderr)
	verbose := fs.Bool("v", false, "show the output of debootstrap and go build")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: fencecheck images [-v] [build [KIND...]|list|prune]\n\n"+
			"build  builds what is missing of the base (debootstrap), etcd and consul (from Go source),\n"+
			"       zookeeper (Debian's package) and worker images, or only of the KINDs named (and the\n"+
			"       base): "+strings.Join(images.Kinds, ", ")+"; tagged by content hash; with nothing\n"+
			"       changed it takes about a second. A run builds what it needs by itself.\n"+
			"list   lists fencecheck's images (* marks those this binary uses)\n"+
			"prune  removes fencecheck's images that this binary does not use\n")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	verb := "build"
	if fs.NArg() > 0 {
		verb = fs.Arg(0)
	}
	if (verb != "build" && fs.NArg() > 1) || (verb != "build" && verb != "list" && verb != "prune") {
		return fmt.Errorf("%w: images takes build [KIND...], list or prune", errUsage)
	}
	var kinds []string
	if verb == "build" && fs.NArg() > 1 {
		kinds = fs.Args()[1:]
		for _, k := range kinds {
			if !slices.Contains(images.Kinds, k) {
				return fmt.Errorf("%w: images build: unknown image %q (valid: %s)", errUsage, k, strings.Join(images.Kinds, ", "))
			}
		}
	}
	cli, err := docker.Connect(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	defer cli.Close()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	if verb == "prune" {
		removed, err := images.Prune(ctx, cli, self)
		for _, r := range removed {
			fmt.Fprintln(stdout, "removed", r)
		}
		if err != nil {
			return fmt.Errorf("%w: %w", harness.ErrHarness, err)
		}
		fmt.Fprintf(stdout, "removed %d images\n", len(removed))
		return nil
	}
	if verb == "list" {
		list, err := images.List(ctx, cli, self)
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
		return tw.Flush()
	}
	b := &images.Builder{Docker: cli, Log: func(f string, a ...any) { fmt.Fprintf(stderr, "fencecheck: "+f+"\n", a...) }}
	if *verbose {
		b.Output = stderr
	}
	start := time.Now()
	refs, err := b.EnsureAll(ctx, self, kinds...)
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHarness, err)
	}
	for _, ref := range refs {
		fmt.Fprintln(stdout, ref)
	}
	fmt.Fprintf(stderr, "fencecheck: images ready in %.1fs\n", time.Since(start).Seconds())
	return nil
}
