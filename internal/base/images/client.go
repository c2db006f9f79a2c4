package images

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Client is the image kind of a user's client program: fencecheck's base
// image (or the user's own), the Debian packages the program needs,
// fencecheck's worker binary, and the program's directory at /client.
const Client = "client"

// ClientImage is what a client image is made of: fencecheck's base image
// (or the user's), the packages, the worker binary, the client directory.
type ClientImage struct {
	// From is the user's image to start from; empty: fencecheck's base
	// image. Either way the worker binary goes to /usr/local/bin/fencecheck
	// (a static binary: any Linux image will do).
	From string
	// Packages are installed by apt-get (From must then be Debian-based).
	Packages []string
	// Files are the client directory's files, by relative path, copied to
	// /client.
	Files map[string]File
	// Build, when not empty, is a shell command run in /client after the
	// packages are installed and the files copied (the manifest's
	// image_build). A failure fails the image's build, with its output.
	Build string
}

// File is a file of an image's build context.
type File struct {
	Data []byte
	Mode int64
}

// EnsureClient builds the client image unless it exists, and returns its
// tag. The tag is a hash of everything in it, so that an edit of the
// client's directory makes a new image and an unchanged one is reused.
func (b *Builder) EnsureClient(ctx context.Context, workerBinary string, c ClientImage) (string, error) {
	from := c.From
	if from == "" {
		ref, err := b.EnsureBase(ctx)
		if err != nil {
			return "", err
		}
		from = ref
	}
	ins, err := b.Engine.Inspect(ctx, from)
	if err != nil {
		return "", fmt.Errorf("%w: client image %s: %v (build or load it on this Engine first)", ErrBuild, from, err)
	}
	bin, err := os.ReadFile(workerBinary)
	if err != nil {
		return "", fmt.Errorf("images: worker binary: %w", err)
	}
	parts := [][]byte{[]byte(from), []byte(ins.ID), bin, []byte(strings.Join(c.Packages, " ")), []byte(c.Build)}
	names := make([]string, 0, len(c.Files))
	for n := range c.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		parts = append(parts, []byte(fmt.Sprintf("%s %o", n, c.Files[n].Mode)), c.Files[n].Data)
	}
	ref := "fencecheck/client:" + hashOf(parts...)
	return ref, b.ensure(ctx, ref, func(ctx context.Context, ref string) error {
		// The packages' layer comes first, so that the Engine's build
		// cache keeps it when only the binary or the client changes.
		var df strings.Builder
		// A user's image may set a user or an entrypoint: the worker runs
		// as root (faults need it) with its own command.
		fmt.Fprintf(&df, "FROM %s\nUSER root\nENTRYPOINT []\n", from)
		if len(c.Packages) > 0 {
			b.logf("  apt-get install %s (cached after the first build)", strings.Join(c.Packages, " "))
			// Debian's JREs link their man pages in postinst, and the base
			// image has no /usr/share/man/man1 (docs are stripped).
			fmt.Fprintf(&df, "RUN mkdir -p /usr/share/man/man1 && apt-get -q -y update && DEBIAN_FRONTEND=noninteractive apt-get -q -y install --no-install-recommends %s && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb\n",
				strings.Join(c.Packages, " "))
		}
		// The client's files and build step come before the worker binary,
		// which changes with every build of fencecheck: a compiled client is
		// then compiled again only when its own files change.
		files := map[string]File{"fencecheck": {Data: bin, Mode: 0o755}}
		for n, f := range c.Files {
			files["client/"+n] = f
		}
		if len(c.Files) > 0 {
			df.WriteString("COPY client/ /client/\n")
		}
		df.WriteString("WORKDIR /client\n")
		if c.Build != "" {
			b.logf("  in the image: %s", c.Build)
			run, err := json.Marshal([]string{"/bin/sh", "-c", c.Build})
			if err != nil {
				return err
			}
			fmt.Fprintf(&df, "RUN %s\n", run)
		}
		df.WriteString("COPY fencecheck /usr/local/bin/fencecheck\n")
		df.WriteString(labels(Client, ""))
		return b.buildFiles(ctx, ref, df.String(), files, nil)
	})
}
