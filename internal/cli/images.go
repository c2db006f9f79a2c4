package cli

import (
	"context"
	"io"
	"strings"

	"github.com/fencecheck/fencecheck/internal/harness/imageset"
)

func cmdImages(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := verbFlags("images", stderr, "build  builds what is missing of the base (debootstrap), etcd and consul (from Go source),\n"+
		"       zookeeper (Debian's package) and worker images, each target's default version,\n"+
		"       tagged by content hash; with nothing changed it takes about a second; given\n"+
		"       kinds ("+imageset.KindNames()+", or a version: etcd@3.4.3, etcd@debian),\n"+
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
		"save   DIR [KIND...] writes the images of the KINDs given (each must be built; matrix\n"+
		"       --images lists those a matrix uses), or every image this binary uses that is\n"+
		"       built, to DIR, one archive per image named by its tag (its content hash): a CI\n"+
		"       cache directory; archives already there are kept (one that load would refuse\n"+
		"       is written again), those of fencecheck's other images removed\n"+
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
	var dirs []string
	if *clientDirs != "" {
		dirs = strings.Split(*clientDirs, ",")
	}
	return imageSet(stderr).Run(ctx, imageset.Command{Verb: verb, Kinds: kinds, Verbose: *verbose, AllVersions: *allVersions, ClientDirs: dirs}, stdout, stderr)
}

// imageSet is the images of this binary's targets and its worker binary.
func imageSet(stderr io.Writer) imageset.Set {
	return imageset.Set{
		Targets:      parts.Targets,
		WorkerBinary: func() (string, error) { return parts.WorkerBinary(stderr) },
	}
}
