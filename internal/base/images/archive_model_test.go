package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// engineModel is an Engine's images as Docker 20.10 keeps and loads them:
// tags to image IDs, an ID being the sha256 digest of the image's config.
// Its Load does what the Engine does with an archive: it unpacks it (a
// later entry of a name replaces an earlier one), reads manifest.json, and
// tags every RepoTags of every item with the digest of the item's config,
// reporting each tag it loaded. Its Save writes the archive docker save
// writes. Its other methods are not for these tests (they panic).
type engineModel struct {
	runtime.Images
	mu      sync.Mutex
	tags    map[string]string // ref -> image ID
	loads   int               // calls of Load
	removed []string          // what Remove was called with

	extraTag string // when set, Load also tags this (an Engine that lies)
	skewID   bool   // when set, Inspect reports IDs Load did not make
}

func newEngineModel() *engineModel { return &engineModel{tags: map[string]string{}} }

// imageConfig is the config of the model's image ref (every image of ref
// is the same image) and its ID.
func imageConfig(ref string) ([]byte, string) {
	cfg := fmt.Appendf(nil, `{"config":{"Labels":{"fencecheck.image":%q}},"rootfs":{"type":"layers","diff_ids":[]}}`, ref)
	sum := sha256.Sum256(cfg)
	return cfg, "sha256:" + hex.EncodeToString(sum[:])
}

// add makes ref an image of the Engine and returns its ID.
func (m *engineModel) add(ref string) string {
	_, id := imageConfig(ref)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tags[ref] = id
	return id
}

func (m *engineModel) snapshot() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.tags)
}

func (m *engineModel) Inspect(_ context.Context, ref string) (runtime.ImageInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.tags[ref]
	if !ok {
		return runtime.ImageInfo{}, fmt.Errorf("no such image: %s: %w", ref, runtime.ErrImageNotFound)
	}
	if m.skewID {
		id = "sha256:" + strings.Repeat("0", 64)
	}
	return runtime.ImageInfo{ID: id}, nil
}

func (m *engineModel) Remove(_ context.Context, ref string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removed = append(m.removed, ref)
	if _, ok := m.tags[ref]; !ok {
		return fmt.Errorf("no such image: %s", ref)
	}
	delete(m.tags, ref)
	return nil
}

func (m *engineModel) Save(_ context.Context, ref string, w io.Writer) error {
	m.mu.Lock()
	_, ok := m.tags[ref]
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("no such image: %s", ref)
	}
	_, err := w.Write(savedArchive(ref))
	return err
}

// Load unpacks the archive as the Engine does, tags what manifest.json
// says and reports the tags.
func (m *engineModel) Load(_ context.Context, r io.Reader) ([]string, error) {
	m.mu.Lock()
	m.loads++
	m.mu.Unlock()
	items, files, err := unpack(r)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var loaded []string
	for _, it := range items {
		cfg, ok := files[it.Config]
		if !ok {
			return loaded, fmt.Errorf("no config %s", it.Config)
		}
		sum := sha256.Sum256(cfg)
		for _, tag := range it.RepoTags {
			m.tags[tag] = "sha256:" + hex.EncodeToString(sum[:])
			loaded = append(loaded, tag)
		}
	}
	if m.extraTag != "" {
		m.tags[m.extraTag] = "sha256:" + strings.Repeat("e", 64)
		loaded = append(loaded, m.extraTag)
	}
	return loaded, nil
}

// unpack is what Docker 20.10 reads of an archive: its regular files by
// name (a later entry of a name replacing an earlier one, as unpacking
// does) and manifest.json's items. It does not follow links.
func unpack(r io.Reader) ([]manifestItem, map[string][]byte, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("unpacking: %w", err)
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if h.Typeflag != tar.TypeReg {
			delete(files, name)
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, nil, fmt.Errorf("unpacking: %w", err)
		}
		files[name] = b
	}
	mb, ok := files["manifest.json"]
	if !ok {
		return nil, nil, fmt.Errorf("open /var/lib/docker/tmp/docker-import-1/repositories: no such file or directory")
	}
	var items []manifestItem
	if err := json.Unmarshal(mb, &items); err != nil {
		return nil, nil, err
	}
	return items, files, nil
}

// entry is one entry of a tar the tests write.
type entry struct {
	name string
	typ  byte // tar.TypeReg when 0
	body []byte
	link string
}

// archiveEntries is the archive docker save writes of the model's image
// ref, with tags as its manifest's RepoTags (ref alone when none are
// given).
func archiveEntries(ref string, tags ...string) []entry {
	if len(tags) == 0 {
		tags = []string{ref}
	}
	cfg, id := imageConfig(ref)
	hexID := strings.TrimPrefix(id, "sha256:")
	layer := strings.Repeat("a", 64)
	man, _ := json.Marshal([]map[string]any{{"Config": hexID + ".json", "RepoTags": tags, "Layers": []string{layer + "/layer.tar"}}})
	return []entry{
		{name: hexID + ".json", body: cfg},
		{name: layer + "/", typ: tar.TypeDir},
		{name: layer + "/VERSION", body: []byte("1.0")},
		{name: layer + "/json", body: []byte("{}")},
		{name: layer + "/layer.tar", body: make([]byte, 1024)},
		{name: "manifest.json", body: man},
		{name: "repositories", body: fmt.Appendf(nil, `{"x":{"y":%q}}`, layer)},
	}
}

// tarOf is a tar of entries.
func tarOf(entries []entry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if h.Typeflag == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			panic(err)
		}
		tw.Write(e.body[:h.Size])
	}
	tw.Close()
	return buf.Bytes()
}

// savedArchive is the archive docker save writes of the model's image ref.
func savedArchive(ref string) []byte { return tarOf(archiveEntries(ref)) }

// writeArchive writes entries as dir's archive of ref (its file name).
func writeArchive(t *testing.T, dir, ref string, entries []entry) string {
	t.Helper()
	p := dir + "/" + ArchiveName(ref)
	if err := os.WriteFile(p, tarOf(entries), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
