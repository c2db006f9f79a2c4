package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// ReadArchive takes docker save's archive of one image and returns its tag
// and image ID; every other shape, each of which would make the Engine do
// something else than load that image under that tag, is refused, saying
// why.
func TestReadArchive(t *testing.T) {
	_, baseID := imageConfig(baseRef)
	layer := strings.Repeat("a", 64) + "/layer.tar"
	man := manifestOf(baseRef, baseRef)
	good := archiveEntries(baseRef)
	img, err := ReadArchive(bytes.NewReader(tarOf(good)))
	if err != nil || img.Ref != baseRef || !slices.Equal(img.IDs, []string{baseID}) {
		t.Fatalf("ReadArchive of a saved archive: %+v, %v; want %s, %s", img, err, baseRef, baseID)
	}
	indexDigest := "sha256:" + strings.Repeat("b", 64)
	index := func(name string, n int) entry {
		var ms []string
		for range n {
			ms = append(ms, fmt.Sprintf(`{"digest":%q,"annotations":{"io.containerd.image.name":%q,"org.opencontainers.image.ref.name":"6500e7eff356"}}`, indexDigest, name))
		}
		return entry{name: "index.json", body: []byte(`{"manifests":[` + strings.Join(ms, ",") + `]}`)}
	}
	img, err = ReadArchive(bytes.NewReader(tarOf(append(slices.Clone(good), index("docker.io/"+baseRef, 1)))))
	if err != nil || img.Ref != baseRef || !slices.Equal(img.IDs, []string{baseID, indexDigest}) {
		t.Errorf("ReadArchive with an OCI index.json: %+v, %v; want both IDs", img, err)
	}
	// A layer given twice is a link to the first (docker save writes it so).
	twice := append(slices.Clone(good), entry{name: "bbb/", typ: tar.TypeDir}, entry{name: "bbb/layer.tar", typ: tar.TypeSymlink, link: "../" + layer})
	twice = withManifest(twice, []byte(strings.Replace(string(man), `"Layers":[`, `"Layers":["bbb/layer.tar",`, 1)))
	if img, err := ReadArchive(bytes.NewReader(tarOf(twice))); err != nil || img.Ref != baseRef {
		t.Errorf("ReadArchive with a linked layer: %+v, %v", img, err)
	}

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(tarOf(good))
	zw.Close()
	many := make([]entry, maxArchiveEntries+1)
	for i := range many {
		many[i] = entry{name: fmt.Sprintf("d%d/", i), typ: tar.TypeDir}
	}
	saved := tarOf(good)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "no manifest.json"},
		{"not a tar", []byte("hello, world\n"), "not an archive of images save"},
		{"gzip", gz.Bytes(), "not an archive of images save"},
		{"cut short", saved[:len(saved)-1024-600], "cut short"},
		{"no manifest", tarOf(good[:5]), "no manifest.json"},
		{"two tags", tarOf(archiveEntries(baseRef, baseRef, workerRef)), workerRef},
		{"no tag", tarOf(withManifest(good, manifestOf(baseRef))), "names 0 tags"},
		{"two images", tarOf(withManifest(good, []byte(`[`+string(man[1:len(man)-1])+`,`+string(man[1:len(man)-1])+`]`))), "2 images"},
		{"a digest", tarOf(withManifest(good, bytes.Replace(man, []byte(":6500e7eff356"), []byte("@sha256:"+strings.Repeat("c", 64)), 1))), "not a tag"},
		{"a tag and a digest", tarOf(withManifest(good, bytes.Replace(man, []byte(":6500e7eff356"), []byte(":6500e7eff356@sha256:"+strings.Repeat("c", 64)), 1))), "not a tag alone"},
		{"not JSON", tarOf(withManifest(good, []byte("[{"))), "manifest.json:"},
		{"manifest.json twice", tarOf(append(slices.Clone(good), entry{name: "/manifest.json", body: man})), "twice"},
		{"manifest.json a link", tarOf(append(withManifest(good, nil)[:5], entry{name: "m.json", body: man}, entry{name: "manifest.json", typ: tar.TypeSymlink, link: "m.json"})), "not a regular file"},
		{"manifest.json through a link", tarOf(append(withManifest(good, manifestOf(baseRef, baseRef)), entry{name: "d", typ: tar.TypeSymlink, link: "."}, entry{name: "d/manifest.json", body: manifestOf(baseRef, baseRef, workerRef)})), "beneath the symbolic link"},
		{"a hard link", tarOf(append(slices.Clone(good), entry{name: "h", typ: tar.TypeLink, link: "manifest.json"})), "tar type"},
		{"a device", tarOf(append(slices.Clone(good), entry{name: "dev", typ: tar.TypeChar})), "tar type"},
		{"a FIFO", tarOf(append(slices.Clone(good), entry{name: "fifo", typ: tar.TypeFifo})), "tar type"},
		{"leaves the archive", tarOf(append(slices.Clone(good), entry{name: "../x", body: []byte("x")})), "leaves the archive"},
		{"a link out", tarOf(append(slices.Clone(good), entry{name: "out", typ: tar.TypeSymlink, link: "/etc/passwd"})), "points out of the archive"},
		{"a link up", tarOf(append(slices.Clone(good), entry{name: "up", typ: tar.TypeSymlink, link: "../../x"})), "points out of the archive"},
		{"no config", tarOf(good[1:]), "config"},
		{"no layer", tarOf(slices.Delete(slices.Clone(good), 4, 5)), "layer"},
		{"index.json names another", tarOf(append(slices.Clone(good), index(workerRef, 1))), workerRef},
		{"index.json has two", tarOf(append(slices.Clone(good), index(baseRef, 2))), "2 images"},
		{"index.json a link", tarOf(append(slices.Clone(good), entry{name: "index.json", typ: tar.TypeSymlink, link: "manifest.json"})), "index.json"},
		{"too many entries", tarOf(append(many, good...)), "more than"},
		{"a long name", tarOf(append(slices.Clone(good), entry{name: strings.Repeat("n", maxEntryName+1), body: []byte("x")})), "more than"},
		{"manifest.json too large", tarOf(withManifest(good, append(slices.Clone(man), bytes.Repeat([]byte(" "), maxMetadataSize)...))), "larger than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			img, err := ReadArchive(bytes.NewReader(c.data))
			if !errors.Is(err, ErrBadArchive) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ReadArchive: %+v, %v; want an error saying %q", img, err, c.want)
			}
		})
	}
}

// FuzzReadArchive: ReadArchive never panics, refuses only with
// ErrBadArchive, and an archive it takes is one the Engine would load as
// that image alone (engineLoadsOnly).
func FuzzReadArchive(f *testing.F) {
	good := archiveEntries(baseRef)
	f.Add(tarOf(good))
	f.Add(tarOf(archiveEntries(baseRef, baseRef, workerRef)))
	f.Add(tarOf(append(slices.Clone(good), entry{name: "./manifest.json", body: manifestOf(baseRef, workerRef)})))
	f.Add(tarOf(append(slices.Clone(good), entry{name: "d", typ: tar.TypeSymlink, link: "."})))
	f.Add(tarOf(append(slices.Clone(good), entry{name: "index.json", body: []byte(`{"manifests":[{"digest":"sha256:` + strings.Repeat("b", 64) + `"}]}`)})))
	f.Add([]byte{})
	f.Add([]byte("hello"))
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := ReadArchive(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrBadArchive) {
				t.Fatalf("an error that is not ErrBadArchive: %v", err)
			}
			return
		}
		engineLoadsOnly(t, data, img)
	})
}

// engineLoadsOnly fails t unless the Engine, given data, would load img
// alone: unpacked as Docker does (unpack), its manifest.json has one item,
// whose one tag is img's and whose config has img's first ID as digest.
func engineLoadsOnly(t *testing.T, data []byte, img ArchiveImage) {
	t.Helper()
	items, files, err := unpack(bytes.NewReader(data))
	if err != nil || len(items) != 1 || len(items[0].RepoTags) != 1 || !namesRef(items[0].RepoTags[0], img.Ref) {
		t.Fatalf("ReadArchive took it as %+v; the Engine would load %+v (%v)", img, items, err)
	}
	sum := sha256.Sum256(files[items[0].Config])
	if id := "sha256:" + hex.EncodeToString(sum[:]); len(img.IDs) == 0 || img.IDs[0] != id {
		t.Fatalf("ReadArchive took it as %+v; the Engine's ID would be %s", img, id)
	}
}

// FuzzArchiveManifest is FuzzReadArchive on a saved archive whose
// manifest.json (and index.json, when not empty) the fuzzer writes: the
// parsers of both, with the tar around them whole.
func FuzzArchiveManifest(f *testing.F) {
	good := archiveEntries(baseRef)
	f.Add(manifestOf(baseRef, baseRef), []byte{})
	f.Add(manifestOf(baseRef, baseRef, workerRef), []byte{})
	f.Add(manifestOf(baseRef, "docker.io/"+baseRef), []byte(`{"manifests":[{"digest":"sha256:`+strings.Repeat("b", 64)+`","annotations":{"io.containerd.image.name":"docker.io/`+baseRef+`"}}]}`))
	f.Add([]byte(`[{"Config":"x","RepoTags":["a:b"],"Layers":[]}]`), []byte(`{"manifests":[]}`))
	f.Fuzz(func(t *testing.T, manifest, index []byte) {
		entries := withManifest(good, manifest)
		if len(index) > 0 {
			entries = append(entries, entry{name: "index.json", body: index})
		}
		data := tarOf(entries)
		img, err := ReadArchive(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrBadArchive) {
				t.Fatalf("an error that is not ErrBadArchive: %v", err)
			}
			return
		}
		engineLoadsOnly(t, data, img)
	})
}
