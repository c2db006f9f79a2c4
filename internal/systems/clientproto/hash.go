package clientproto

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	"github.com/fencecheck/fencecheck/internal/verdicts/store"
)

// FilesLimit bounds a client directory's files, in bytes (what is copied
// into the image).
const FilesLimit = 256 << 20

// Digest is what a client directory held (test.json's client_files): a
// hash of each file the image build copies (its relative path, mode and
// contents; Files skips only .git) and one over them all.
type Digest = store.ClientDigest

// Digest hashes the directory's files as Files reads them.
func (s ProgramDir) Digest() (Digest, error) {
	files, err := s.Files(FilesLimit)
	if err != nil {
		return Digest{}, err
	}
	d := Digest{Files: make(map[string]string, len(files))}
	all := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f := files[p]
		h := sha256.New()
		fmt.Fprintf(h, "%o\x00", f.Mode)
		h.Write(f.Data)
		sum := hex.EncodeToString(h.Sum(nil))
		d.Files[p] = sum
		fmt.Fprintf(all, "%q %s\n", p, sum)
	}
	d.Hash = hex.EncodeToString(all.Sum(nil))
	return d, nil
}

// FirstChange is the first file, in path order, that differs between
// was and now (changed, gone or new), and "" when none does.
func FirstChange(was, now Digest) string {
	paths := slices.Sorted(maps.Keys(was.Files))
	for p := range now.Files {
		if _, ok := was.Files[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	for _, p := range paths {
		a, inWas := was.Files[p]
		b, inNow := now.Files[p]
		switch {
		case !inNow:
			return p + " (gone)"
		case !inWas:
			return p + " (new)"
		case a != b:
			return p
		}
	}
	return ""
}
