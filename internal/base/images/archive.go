package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// An image archive is one image as `docker save` writes it, in a directory
// of archives (a CI cache): its file name is its tag with "/" as "_" and ":"
// as "@" (fencecheck_etcd@3.6.16-1a2b3c4d5e6f.tar). A tag holds a hash of
// everything in the image, so the name is a stable cache key: an archive
// that is there, and holds what its name says, is never written again, and
// a CI cache keyed on the list of names is valid exactly when the images
// are the same. An archive is untrusted input: whoever could write the
// cache chose it (archiveread.go).

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
// files are left alone. An archive is there already when it is a regular
// file that load would load as the image the Engine has (its tag alone,
// its image ID); anything else under its name (an empty file, a link, a
// FIFO, an archive cut short or of another image) is written again. An
// archive is written to a temporary name and renamed, so that an
// interrupted save leaves no archive that load would trust.
func Save(ctx context.Context, eng runtime.Images, dir string, refs []string, logf func(string, ...any)) (SaveResult, error) {
	var res SaveResult
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("images: save: %w", err)
	}
	for _, ref := range refs {
		path := filepath.Join(dir, ArchiveName(ref))
		if err := saved(ctx, eng, path, ref); err == nil {
			res.Kept = append(res.Kept, path)
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			logf("%v: writing it again", err)
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

// saved is nil when path is an archive load would load as the Engine's
// image ref; an error wrapping fs.ErrNotExist when there is nothing at
// path; else an error saying what is wrong with it.
func saved(ctx context.Context, eng runtime.Images, path, ref string) error {
	if _, err := os.Lstat(path); err != nil {
		return err
	}
	f, _, img, err := checkArchive(path, ref)
	if err != nil {
		return err
	}
	f.Close()
	info, err := eng.Inspect(ctx, ref)
	if err != nil {
		return fmt.Errorf("images: save: inspect %s: %w", ref, err)
	}
	if !slices.Contains(img.IDs, info.ID) {
		return fmt.Errorf("%s: %w", path, bad("it holds image %s, the Engine's %s is %s", img.IDs[0], ref, info.ID))
	}
	return nil
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

// Archive is an archive of a cache directory that CheckDir read.
type Archive struct {
	Path  string
	Image ArchiveImage // Image.Ref is the tag of its file name
}

// CheckDir reads every archive in dir (ReadArchive), without the Engine,
// and returns them, the base's first (the others build on it). An archive
// must be a regular file (not a link, a FIFO, a device; opened without
// blocking), of 1 byte to MaxArchiveSize, holding the image its file name
// says and nothing else. Files whose names are not archive names are an
// error too (a cache directory holds archives only); each of these errors
// wraps ErrBadArchive. An empty directory is an error.
func CheckDir(dir string) ([]Archive, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("images: load: %w", err)
	}
	var archives []Archive
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".saving-") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		ref, ok := archiveRef(e.Name())
		if !ok {
			return nil, fmt.Errorf("images: load: %s: %w", path, bad("its name is not an archive name of images save (NAME@TAG%s)", ArchiveExt))
		}
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("images: load: %s: %w", path, bad("it is %s (an archive is a regular file)", FileKind(e.Type())))
		}
		f, _, img, err := checkArchive(path, ref)
		if err != nil {
			return nil, fmt.Errorf("images: load: %w", err)
		}
		f.Close()
		archives = append(archives, Archive{Path: path, Image: img})
	}
	if len(archives) == 0 {
		return nil, fmt.Errorf("images: load: no image archives in %s", dir)
	}
	sort.Slice(archives, func(i, j int) bool { return archives[i].Image.Ref < archives[j].Image.Ref })
	return archives, nil
}

// Load loads each archive in dir whose image the Engine does not have,
// once every archive in dir passed CheckDir: one that does not loads
// nothing. Each archive is read again from the file the Engine is given,
// and what the Engine says it loaded must then be the archive's tag alone,
// with the archive's image ID; if it is not, what it loaded is removed and
// Load fails (an error wrapping ErrBadArchive).
func Load(ctx context.Context, eng runtime.Images, dir string, logf func(string, ...any)) (LoadResult, error) {
	var res LoadResult
	archives, err := CheckDir(dir)
	if err != nil {
		return res, err
	}
	b := &Builder{Engine: eng}
	for _, a := range archives {
		ref := a.Image.Ref
		ok, err := b.Exists(ctx, ref)
		if err != nil {
			return res, err
		}
		if ok {
			res.Present = append(res.Present, ref)
			continue
		}
		logf("loading %s from %s", ref, a.Path)
		if err := loadOne(ctx, eng, a.Path, ref); err != nil {
			return res, fmt.Errorf("images: load %s: %w", a.Path, err)
		}
		res.Loaded = append(res.Loaded, ref)
	}
	return res, nil
}

// loadOne loads the archive at path, which must hold ref, from the file it
// checked, and checks what the Engine loaded; on any mismatch it removes
// what the Engine loaded.
func loadOne(ctx context.Context, eng runtime.Images, path, ref string) error {
	f, size, img, err := checkArchive(path, ref)
	if err != nil {
		return err
	}
	defer f.Close()
	loaded, err := eng.Load(ctx, io.NewSectionReader(f, 0, size))
	if err == nil {
		err = checkLoaded(ctx, eng, img, loaded)
	}
	if err != nil && len(loaded) > 0 {
		err = fmt.Errorf("%w; %s", err, removeLoaded(eng, loaded))
	}
	return err
}

// checkLoaded checks that what the Engine says it loaded is img's tag
// alone, and that the Engine's image of it is img.
func checkLoaded(ctx context.Context, eng runtime.Images, img ArchiveImage, loaded []string) error {
	if len(loaded) != 1 || !namesRef(loaded[0], img.Ref) {
		return bad("the Engine loaded %s, not %s alone", strings.Join(loaded, ", "), img.Ref)
	}
	info, err := eng.Inspect(ctx, img.Ref)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", img.Ref, err)
	}
	if !slices.Contains(img.IDs, info.ID) {
		return bad("the Engine's %s has the image ID %s, the archive's is %s", img.Ref, info.ID, img.IDs[0])
	}
	return nil
}

// removeLoaded removes what the Engine loaded (tags and image IDs), with
// a context of its own (the load's may be cancelled), and says what it
// removed.
func removeLoaded(eng runtime.Images, loaded []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var msgs []string
	for _, r := range loaded {
		if err := eng.Remove(ctx, r); err != nil {
			msgs = append(msgs, fmt.Sprintf("could not remove %s: %v", r, err))
		} else {
			msgs = append(msgs, "removed "+r)
		}
	}
	return strings.Join(msgs, ", ")
}

// SaveKinds is Save of exactly the images of kinds (KIND or KIND@VERSION,
// as Ref names them; the worker's tag needs workerBinary): a CI cache
// directory of the images a matrix's cells use (matrix --images) and no
// others. Each is checked on the Engine first: one that is not built is an
// error naming it (images build KIND first), before anything is written.
// Archives already there are kept (each image is written once), those of
// other fencecheck images removed (Save).
func SaveKinds(ctx context.Context, eng runtime.Images, dir string, kinds []string, workerBinary string, logf func(string, ...any)) (SaveResult, error) {
	var refs []string
	for _, k := range kinds {
		ref, err := Ref(k, workerBinary)
		if err != nil {
			return SaveResult{}, err
		}
		if _, err := eng.Inspect(ctx, ref); errors.Is(err, runtime.ErrImageNotFound) {
			return SaveResult{}, fmt.Errorf("images: save: %s's image %s is not built (fencecheck images build %s first)", k, ref, k)
		} else if err != nil {
			return SaveResult{}, fmt.Errorf("images: save: inspect %s: %w", ref, err)
		}
		if !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	return Save(ctx, eng, dir, refs, logf)
}
