package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/internal/runtime"
)

// An image archive is one image as `docker save` writes it, in a directory
// of archives (a CI cache): its file name is its tag with "/" as "_" and ":"
// as "@" (fencecheck_etcd@3.6.16-1a2b3c4d5e6f.tar). A tag holds a hash of
// everything in the image, so the name is a stable cache key: an archive
// that exists is never written again, and a CI cache keyed on the list of
// names is valid exactly when the images are the same.

// ArchiveExt is an image archive's extension.
const ArchiveExt = ".tar"

// ArchiveName is the file name of ref's archive.
func ArchiveName(ref string) string {
	return strings.NewReplacer("/", "_", ":", "@").Replace(ref) + ArchiveExt
}

// archiveRef is the tag of an archive's file name, or false if the name is
// not one ArchiveName makes.
func archiveRef(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ArchiveExt)
	repo, tag, found := strings.Cut(base, "@")
	if !ok || !found || repo == "" || tag == "" || strings.ContainsAny(tag, "@/") {
		return "", false
	}
	return strings.Replace(repo, "_", "/", 1) + ":" + tag, true
}

// SaveResult is what Save did with each image.
type SaveResult struct {
	Written []string // archives written
	Kept    []string // archives that were there already
	Removed []string // archives of other fencecheck images, removed
}

// Save writes an archive of each of refs (which must exist on the Engine)
// to dir, which it creates, unless the archive is there already, and then
// removes the archives of fencecheck's other images (older tags) from dir,
// so that a cache directory holds the images in use and no more. Other
// files are left alone. An archive is written to a temporary name and
// renamed, so that an interrupted save leaves no archive that load would
// trust.
func Save(ctx context.Context, eng runtime.Images, dir string, refs []string, logf func(string, ...any)) (SaveResult, error) {
	var res SaveResult
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("images: save: %w", err)
	}
	for _, ref := range refs {
		path := filepath.Join(dir, ArchiveName(ref))
		if _, err := os.Stat(path); err == nil {
			res.Kept = append(res.Kept, path)
			continue
		}
		logf("saving %s to %s", ref, path)
		if err := saveOne(ctx, eng, ref, path); err != nil {
			return res, err
		}
		res.Written = append(res.Written, path)
	}
	keep := map[string]bool{}
	for _, ref := range refs {
		keep[ArchiveName(ref)] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return res, fmt.Errorf("images: save: %w", err)
	}
	for _, e := range entries {
		ref, ok := archiveRef(e.Name())
		if !ok || keep[e.Name()] || !strings.HasPrefix(ref, "fencecheck/") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Remove(path); err != nil {
			return res, fmt.Errorf("images: save: %w", err)
		}
		res.Removed = append(res.Removed, path)
	}
	return res, nil
}

func saveOne(ctx context.Context, eng runtime.Images, ref, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".saving-*")
	if err != nil {
		return fmt.Errorf("images: save %s: %w", ref, err)
	}
	defer os.Remove(tmp.Name())
	if err := eng.Save(ctx, ref, tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("images: save %s: %w", ref, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("images: save %s: %w", ref, err)
	}
	// Readable by a CI cache step that does not run as root.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("images: save %s: %w", ref, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("images: save %s: %w", ref, err)
	}
	return nil
}

// LoadResult is what Load did with each archive.
type LoadResult struct {
	Loaded  []string // tags loaded
	Present []string // tags the Engine had already
}

// Load loads each archive in dir whose image the Engine does not have, and
// checks that its tag is there afterwards. Files whose names are not
// archive names are an error (a cache directory holds archives only), as
// is an empty directory.
func Load(ctx context.Context, eng runtime.Images, dir string, logf func(string, ...any)) (LoadResult, error) {
	var res LoadResult
	entries, err := os.ReadDir(dir)
	if err != nil {
		return res, fmt.Errorf("images: load: %w", err)
	}
	var refs []string
	names := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".saving-") {
			continue
		}
		ref, ok := archiveRef(e.Name())
		if !ok {
			return res, fmt.Errorf("images: load: %s is not an image archive of images save (NAME@TAG%s)", filepath.Join(dir, e.Name()), ArchiveExt)
		}
		refs = append(refs, ref)
		names[ref] = filepath.Join(dir, e.Name())
	}
	if len(refs) == 0 {
		return res, fmt.Errorf("images: load: no image archives in %s", dir)
	}
	sort.Strings(refs) // the base (fencecheck_base) first: the others build on it
	b := &Builder{Engine: eng}
	for _, ref := range refs {
		ok, err := b.Exists(ctx, ref)
		if err != nil {
			return res, err
		}
		if ok {
			res.Present = append(res.Present, ref)
			continue
		}
		logf("loading %s from %s", ref, names[ref])
		if err := loadOne(ctx, eng, names[ref]); err != nil {
			return res, fmt.Errorf("images: load %s: %w", names[ref], err)
		}
		if ok, err := b.Exists(ctx, ref); err != nil || !ok {
			return res, fmt.Errorf("images: load %s: the archive did not hold %s (%v)", names[ref], ref, err)
		}
		res.Loaded = append(res.Loaded, ref)
	}
	return res, nil
}

func loadOne(ctx context.Context, eng runtime.Images, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return eng.Load(ctx, f)
}
