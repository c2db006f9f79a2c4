package images

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// recipeFiles are the recipe's embedded files in the order their contents are
// hashed: go.mod.txt and go.sum.txt first, then the others by name (the
// order the images' tags have always hashed them in).
func recipeFiles(v ServerVersion) []string {
	ents, err := fs.ReadDir(recipes, v.Dir)
	if err != nil {
		panic(err) // embedded at build time: cannot be missing
	}
	var first, rest []string
	for _, e := range ents { // ReadDir sorts by name
		p := path.Join(v.Dir, e.Name())
		if e.Name() == "go.mod.txt" || e.Name() == "go.sum.txt" {
			first = append(first, p)
		} else {
			rest = append(rest, p)
		}
	}
	return append(first, rest...)
}

// isDockerfile reports whether the recipe is a Dockerfile (else a Go module).
func isDockerfile(v ServerVersion) bool { return v.Pkg == "" }

// onBase reports whether the version's image stands on the base image: a
// Dockerfile recipe (Debian's package, installed by apt), or kube-apiserver
// (left on the base); every other Go-built server's image is FROM scratch,
// the static binary alone (scratchDockerfile).
func onBase(v ServerVersion, kind string) bool { return isDockerfile(v) || kind == Kubernetes }

// binaryOf is the file name of the version's server in /usr/local/bin.
func binaryOf(v ServerVersion, kind string) string {
	if v.Binary != "" {
		return v.Binary
	}
	return kind
}

// versionRef is the tag of the version's image: fencecheck/KIND:NAME-HASH, the
// hash of what it is made of: the base's tag (an image on the base) or the
// scratch image's Dockerfile (one FROM scratch), and the recipe's files.
func versionRef(v ServerVersion, kind string) string {
	parts := [][]byte{[]byte(BaseRef())}
	if !onBase(v, kind) {
		bin := binaryOf(v, kind)
		parts = [][]byte{[]byte(scratchDockerfile(bin, "/usr/local/bin/"+bin, kind, v.Server))}
	}
	for _, f := range recipeFiles(v) {
		parts = append(parts, mustRead(f))
	}
	// Only when set, so that the tags of the versions without them stay
	// what they were.
	if v.Ldflags != "" || v.Binary != "" {
		parts = append(parts, []byte("ldflags="+v.Ldflags), []byte("binary="+v.Binary))
	}
	return fmt.Sprintf("fencecheck/%s:%s-%s", kind, v.Name, hashOf(parts...))
}

// versionServer is the version's Go build.
func versionServer(v ServerVersion, kind string) goServer {
	files := map[string]string{}
	for _, f := range recipeFiles(v) {
		files[f] = strings.TrimSuffix(path.Base(f), ".txt")
	}
	binary, takes := binaryOf(v, kind), v.Takes
	if takes == "" {
		takes = "a minute or more"
	}
	return goServer{kind: kind, version: func() string { return v.Server }, ref: func() string { return versionRef(v, kind) },
		files: files, pkg: v.Pkg, ldflags: v.Ldflags, binary: binary, onBase: onBase(v, kind), note: "from " + v.Source + " (" + takes + " the first time)"}
}

// VersionRef is the tag of the image of kind at version name ("" the
// default).
func VersionRef(kind, name string) (string, error) {
	v, ok := LookupVersion(kind, name)
	if !ok {
		return "", fmt.Errorf("images: %s has no version %q (available: %s)", kind, name, VersionNames(kind))
	}
	return versionRef(v, kind), nil
}

// ensureVersion builds the image of kind at version v (and the base, if it
// stands on it) unless it exists.
func (b *Builder) ensureVersion(ctx context.Context, kind string, v ServerVersion) (string, error) {
	if !isDockerfile(v) {
		return b.ensureServer(ctx, versionServer(v, kind))
	}
	base, err := b.EnsureBase(ctx)
	if err != nil {
		return "", err
	}
	ref := versionRef(v, kind)
	return ref, b.ensure(ctx, ref, func(ctx context.Context, ref string) error {
		b.logf("  docker build of %s %s: %s (a few minutes the first time)", kind, v.Name, v.Source)
		var df []byte
		for _, f := range recipeFiles(v) {
			if path.Base(f) == "Dockerfile.txt" {
				df = mustRead(f)
			}
		}
		dockerfile := fmt.Sprintf("%s\n%s", df, labels(kind, v.Server))
		return b.buildContext(ctx, ref, dockerfile, nil, map[string]string{"BASE": base})
	})
}
