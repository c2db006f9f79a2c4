package images

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/distribution/reference"
)

// An archive in a cache directory is untrusted input: whoever could write
// the directory (a CI cache) chose its bytes. What the Engine does with an
// archive is what its manifest.json says (Docker 20.10 unpacks the tar,
// a later entry of a name replacing an earlier one, and tags every
// RepoTags of every item), so a manifest can name any tag: the worker
// image every run uses, inside the base's archive. ReadArchive reads what
// an archive would make the Engine do, and Load loads an archive only when
// that is its own image, under its own tag, and nothing else.

// ErrBadArchive: a file of an image cache directory is not an archive
// images load can load: not a regular file, not an archive of images save,
// or one that holds another image or more than its own.
var ErrBadArchive = errors.New("not an image archive to load")

// Bounds on what an archive may hold, checked before more is read.
const (
	// MaxArchiveSize is the largest archive load opens: 16 GiB (the
	// largest image, kubernetes, is about 1.5 GB).
	MaxArchiveSize = 16 << 30
	// maxArchiveEntries bounds an archive's entries (an image has at most
	// 127 layers: 4 entries each in docker save's format).
	maxArchiveEntries = 10000
	// maxMetadataSize bounds manifest.json, index.json and an image's
	// config: they are read whole.
	maxMetadataSize = 1 << 20
	// maxEntryName bounds an entry's name and a link's target (PATH_MAX;
	// docker save's are under 100 bytes): every name is kept.
	maxEntryName = 4096
)

// ArchiveImage is the one image an archive holds.
type ArchiveImage struct {
	Ref string // its one tag, as manifest.json names it (familiar form)
	// IDs are the image IDs an Engine may give it once loaded: the digest
	// of its config (Docker's image ID) and, when the archive has an OCI
	// index.json, the digest of the index's manifest (the image ID of an
	// Engine on containerd's image store).
	IDs []string
}

// manifestItem is an item of manifest.json, as Docker reads it.
type manifestItem struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// ociIndex is index.json, as an Engine on containerd's image store reads it
// (Docker 20.10 ignores it; Docker 25 writes it beside manifest.json).
type ociIndex struct {
	Manifests []struct {
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
	} `json:"manifests"`
}

// archiveScan is what one pass over an archive's entries found.
type archiveScan struct {
	types   map[string]byte   // entry name (cleaned) -> tar type flag
	links   map[string]string // symbolic link -> its target, cleaned, in the archive
	digests map[string]string // regular files of at most maxMetadataSize -> sha256 hex
	files   map[string][]byte // manifest.json and index.json
}

// ReadArchive reads an archive as docker save writes it (manifest.json,
// each image's config and layers), once, from start to end, reading whole
// only manifest.json, index.json and files of at most 1 MiB (each hashed),
// and skipping the rest (by seeking when r can). It returns the one image
// the archive holds, or an error wrapping ErrBadArchive that says why it
// holds not exactly one: manifest.json missing, not a regular file, not one
// item with one tag, or given twice; the config or a layer missing; an
// index.json naming another image; an entry that is not a regular file, a
// directory or a symbolic link inside the archive, an entry beneath a
// symbolic link, an entry leaving the archive; more entries than an image
// has; a tar cut short.
func ReadArchive(r io.Reader) (ArchiveImage, error) {
	s, err := scanArchive(r)
	if err != nil {
		return ArchiveImage{}, err
	}
	return s.image()
}

// bad is an error wrapping ErrBadArchive.
func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadArchive}, args...)...)
}

// scanArchive reads the entries of the tar r, at most maxArchiveEntries,
// and refuses one that is not of docker save's kinds or names.
func scanArchive(r io.Reader) (*archiveScan, error) {
	s := &archiveScan{types: map[string]byte{}, links: map[string]string{}, digests: map[string]string{}, files: map[string][]byte{}}
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil && n == 0 {
			return nil, bad("not an archive of images save (a tar): %v", err)
		}
		if err != nil {
			return nil, tarError(err)
		}
		if n == maxArchiveEntries {
			return nil, bad("more than %d entries", maxArchiveEntries)
		}
		if err := s.add(h, tr); err != nil {
			return nil, err
		}
	}
	return s, s.checkLinks()
}

// tarError says what a tar's read error means.
func tarError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return bad("the archive is cut short")
	}
	return bad("not an archive of images save (a tar): %v", err)
}

// add records one entry.
func (s *archiveScan) add(h *tar.Header, body io.Reader) error {
	if len(h.Name) > maxEntryName || len(h.Linkname) > maxEntryName {
		return bad("an entry's name or link has more than %d bytes", maxEntryName)
	}
	name, ok := cleanEntry(h.Name)
	if !ok {
		return bad("entry %.200q leaves the archive", h.Name)
	}
	if name == "" {
		if h.Typeflag == tar.TypeDir {
			return nil // the archive's root
		}
		return bad("entry %.200q has no name", h.Name)
	}
	if _, dup := s.types[name]; dup {
		return bad("entry %.200q is in the archive twice (the Engine would read the last)", name)
	}
	s.types[name] = h.Typeflag
	switch h.Typeflag {
	case tar.TypeDir:
	case tar.TypeReg:
		if h.Size > maxMetadataSize {
			return nil
		}
		b, err := io.ReadAll(io.LimitReader(body, maxMetadataSize+1))
		if err != nil {
			return tarError(err)
		}
		sum := sha256.Sum256(b)
		s.digests[name] = hex.EncodeToString(sum[:])
		if name == "manifest.json" || name == "index.json" {
			s.files[name] = b
		}
	case tar.TypeSymlink:
		target, ok := linkTarget(name, h.Linkname)
		if !ok {
			return bad("symbolic link %.200s points out of the archive (%.200q)", name, h.Linkname)
		}
		s.links[name] = target
	default:
		return bad("entry %.200s is of tar type %q (an archive of images save holds files, directories and symbolic links)", name, h.Typeflag)
	}
	return nil
}

// cleanEntry is the name under which the Engine unpacks an entry (a
// leading "/" or "./" dropped), or false if the entry would leave the
// archive's directory.
func cleanEntry(name string) (string, bool) {
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	c = strings.TrimPrefix(path.Clean("/"+c), "/")
	return c, true
}

// linkTarget is the entry a symbolic link named name points to, or false
// if it points out of the archive.
func linkTarget(name, target string) (string, bool) {
	if target == "" || path.IsAbs(target) {
		return "", false
	}
	return cleanEntry(path.Join(path.Dir(name), target))
}

// checkLinks refuses an entry beneath a symbolic link: unpacked, it would
// land where the link points (manifest.json through a link to ".").
func (s *archiveScan) checkLinks() error {
	for name := range s.types {
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if _, ok := s.links[dir]; ok {
				return bad("entry %.200s is beneath the symbolic link %.200s", name, dir)
			}
		}
	}
	return nil
}

// regular is the entry name resolves to, following at most 8 symbolic
// links, when that is a regular file.
func (s *archiveScan) regular(name string) bool {
	for range 8 {
		target, ok := s.links[name]
		if !ok {
			break
		}
		name = target
	}
	return s.types[name] == tar.TypeReg
}

// image checks manifest.json (and index.json) and returns the image.
func (s *archiveScan) image() (ArchiveImage, error) {
	item, err := s.manifest()
	if err != nil {
		return ArchiveImage{}, err
	}
	ref, err := oneTag(item.RepoTags)
	if err != nil {
		return ArchiveImage{}, err
	}
	cfg, ok := s.digests[item.Config]
	if !ok || s.types[item.Config] != tar.TypeReg {
		return ArchiveImage{}, bad("the config %.200q manifest.json names is not a file of at most %d bytes in the archive", item.Config, maxMetadataSize)
	}
	for _, l := range item.Layers {
		if !s.regular(l) {
			return ArchiveImage{}, bad("the layer %.200q manifest.json names is not in the archive", l)
		}
	}
	img := ArchiveImage{Ref: ref, IDs: []string{"sha256:" + cfg}}
	id, err := s.index(ref)
	if err != nil {
		return ArchiveImage{}, err
	}
	if id != "" {
		img.IDs = append(img.IDs, id)
	}
	return img, nil
}

// manifest is manifest.json's one item.
func (s *archiveScan) manifest() (manifestItem, error) {
	b, ok := s.files["manifest.json"]
	if !ok {
		if t, there := s.types["manifest.json"]; there {
			if t != tar.TypeReg {
				return manifestItem{}, bad("manifest.json is not a regular file")
			}
			return manifestItem{}, bad("manifest.json is larger than %d bytes", maxMetadataSize)
		}
		return manifestItem{}, bad("no manifest.json: not an archive of images save")
	}
	var items []manifestItem
	if err := json.Unmarshal(b, &items); err != nil {
		return manifestItem{}, bad("manifest.json: %v", err)
	}
	if len(items) != 1 {
		return manifestItem{}, bad("manifest.json has %d images, not one", len(items))
	}
	return items[0], nil
}

// oneTag is the one tag of tags, in its familiar form (as an archive's
// file name has it), or an error naming them.
func oneTag(tags []string) (string, error) {
	if len(tags) != 1 {
		return "", bad("manifest.json names %d tags%s, not one", len(tags), listTags(tags))
	}
	named, err := reference.ParseNormalizedNamed(tags[0])
	if err != nil {
		return "", bad("manifest.json's tag %.200q: %v", tags[0], err)
	}
	if _, ok := named.(reference.NamedTagged); !ok {
		return "", bad("manifest.json's %.200q is not a tag", tags[0])
	}
	if _, ok := named.(reference.Canonical); ok {
		return "", bad("manifest.json's %.200q is not a tag alone", tags[0])
	}
	return reference.FamiliarString(named), nil
}

// listTags is " (a, b, ...)", each cut, at most 5.
func listTags(tags []string) string {
	if len(tags) == 0 {
		return ""
	}
	var q []string
	for i, t := range tags {
		if i == 5 {
			q = append(q, fmt.Sprintf("and %d more", len(tags)-5))
			break
		}
		q = append(q, fmt.Sprintf("%.200q", t))
	}
	return " (" + strings.Join(q, ", ") + ")"
}

// index checks index.json, when there is one: one manifest, whose name
// annotations, if any, name ref. It returns the manifest's digest.
func (s *archiveScan) index(ref string) (string, error) {
	b, ok := s.files["index.json"]
	if !ok {
		if _, there := s.types["index.json"]; there {
			return "", bad("index.json is not a regular file of at most %d bytes", maxMetadataSize)
		}
		return "", nil
	}
	var idx ociIndex
	if err := json.Unmarshal(b, &idx); err != nil {
		return "", bad("index.json: %v", err)
	}
	if len(idx.Manifests) != 1 {
		return "", bad("index.json has %d images, not one", len(idx.Manifests))
	}
	m := idx.Manifests[0]
	_, tag, _ := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	if name, ok := m.Annotations["io.containerd.image.name"]; ok && !namesRef(name, ref) {
		return "", bad("index.json names %.200q, not %s", name, ref)
	}
	if name, ok := m.Annotations["org.opencontainers.image.ref.name"]; ok && name != tag && !namesRef(name, ref) {
		return "", bad("index.json names %.200q, not %s", name, ref)
	}
	d, ok := strings.CutPrefix(m.Digest, "sha256:")
	if _, err := hex.DecodeString(d); !ok || err != nil || len(d) != 64 {
		return "", bad("index.json's digest %.200q is not a sha256 digest", m.Digest)
	}
	return m.Digest, nil
}

// namesRef reports whether name is a tag that names ref.
func namesRef(name, ref string) bool {
	got, err := oneTag([]string{name})
	return err == nil && got == ref
}

// openArchive opens the file at p for reading, without following a
// symbolic link and without blocking (a FIFO would wait for a writer),
// when it is a regular file of 1 byte to MaxArchiveSize; else an error
// wrapping ErrBadArchive that says what it is.
func openArchive(p string) (*os.File, int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, 0, fmt.Errorf("%s: %w", p, bad("it is a symbolic link (an archive is a regular file)"))
	}
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err == nil {
		err = checkArchiveFile(st)
	}
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w", p, err)
	}
	return f, st.Size(), nil
}

// checkArchiveFile refuses a file that is not a regular file of 1 byte
// to MaxArchiveSize.
func checkArchiveFile(st fs.FileInfo) error {
	switch {
	case !st.Mode().IsRegular():
		return bad("it is %s (an archive is a regular file)", FileKind(st.Mode()))
	case st.Size() == 0:
		return bad("it is empty (0 bytes), not an archive of images save (images save writes it again)")
	case st.Size() > MaxArchiveSize:
		return bad("it has %d bytes, more than the %d of the largest archive load opens", st.Size(), int64(MaxArchiveSize))
	}
	return nil
}

// FileKind names the type of a file that is not a regular one, with its
// article ("a named pipe (FIFO)"), for a refusal that says what was given
// instead: an archive here, a credential file (harness), what merge does
// not copy (matrix).
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "a special file (" + m.Type().String() + ")"
}

// checkArchive opens the archive at p and reads it: it must hold ref,
// alone. It returns the file (at its start), its size and the image; the
// caller closes the file.
func checkArchive(p, ref string) (*os.File, int64, ArchiveImage, error) {
	f, size, err := openArchive(p)
	if err != nil {
		return nil, 0, ArchiveImage{}, err
	}
	img, err := ReadArchive(io.NewSectionReader(f, 0, size))
	if err == nil && img.Ref != ref {
		err = bad("it holds %s, not %s (its file name)", img.Ref, ref)
	}
	if err != nil {
		f.Close()
		return nil, 0, ArchiveImage{}, fmt.Errorf("%s: %w", p, err)
	}
	return f, size, img, nil
}
