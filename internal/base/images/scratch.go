package images

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// scratchRef is the tag of the FROM-scratch image of a server image (see
// BuildScratch): fencecheck/KIND-scratch with the server image's tag and a
// hash of the Dockerfile.
func scratchRef(serverRef, dockerfile string) string {
	repo, tag, _ := strings.Cut(serverRef, ":")
	return repo + "-scratch:" + tag + "-" + hashOf([]byte(dockerfile))[:6]
}

// scratchStart is how each scratch image starts its server, in the layouts
// of the official images: etcd's runs it as CMD, Consul's has an ENTRYPOINT
// (there a wrapper script). So the tests cover both: a command found in
// CMD, and an entry point that must be cleared for the target's own command
// line to run.
var scratchStart = map[string]string{Etcd: "CMD", Consul: "ENTRYPOINT"}

// BuildScratch builds, unless it exists, an image in the style of the
// official distroless ones from the image of kind (KIND or KIND@VERSION, a
// Go-built server): FROM scratch, with nothing but the server's static
// binary at /usr/local/bin/KIND, no shell, no iptables, no libc, started as
// scratchStart says. It is a
// stand-in for a user's image (--image target=REF) on a machine without a
// registry, and what the tests run every fault against. It returns the
// image's tag (fencecheck/KIND-scratch:...). The binary must be static: a server image whose
// binary links libc (Debian's package) is refused.
func (b *Builder) BuildScratch(ctx context.Context, kind string) (string, error) {
	if err := CheckScratch(kind); err != nil {
		return "", err
	}
	k, _ := SplitKind(kind)
	from, err := b.Ensure(ctx, kind, "")
	if err != nil {
		return "", err
	}
	bin := "/usr/local/bin/" + k
	dockerfile := fmt.Sprintf("FROM scratch\nCOPY %s %s\nWORKDIR /var/lib\n%s [%q]\n", k, bin, scratchStart[k], bin)
	ref := scratchRef(from, dockerfile)
	return ref, b.ensure(ctx, ref, func(ctx context.Context, ref string) error {
		data, err := b.copyOut(ctx, from, bin)
		if err != nil {
			return err
		}
		if err := checkStatic(data, bin+" in "+from); err != nil {
			return err
		}
		return b.buildContext(ctx, ref, dockerfile, map[string][]byte{k: data}, nil)
	})
}

// CheckScratch says whether BuildScratch can build kind, at once: etcd or
// consul, at a version built from Go source (not Debian's package).
func CheckScratch(kind string) error {
	k, name := SplitKind(kind)
	if k != Etcd && k != Consul {
		return fmt.Errorf("images: a scratch image needs a Go-built server (etcd, consul), not %q", kind)
	}
	if name == "" {
		return nil
	}
	v, ok := LookupVersion(k, name)
	if !ok {
		return fmt.Errorf("images: %s has no version %q (available: %s)", k, name, VersionNames(k))
	}
	if v.Pkg == "" {
		return fmt.Errorf("images: %s is %s, not built from Go source: no static binary for a scratch image", kind, v.Source)
	}
	return nil
}

// copyOut reads one file from an image.
func (b *Builder) copyOut(ctx context.Context, image, file string) ([]byte, error) {
	data, err := b.Engine.ReadFile(ctx, image, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("images: %s not found in %s", file, image)
	}
	if err != nil {
		return nil, fmt.Errorf("images: copy %s out of %s: %w", file, image, err)
	}
	return data, nil
}
