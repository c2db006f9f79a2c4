package cli

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/distribution/reference"
)

// imageKinds are the keys --image takes, with what each replaces.
var imageKinds = map[string]string{
	"target": "the lock service's servers",
}

// imageFlag is --image KIND=REF, repeatable (or comma-separated): a user's
// own images, from the local Docker Engine, by kind. Set checks the syntax
// and the reference's form at once, so that a malformed value exits 254
// before anything starts; whether the image exists is checked when the
// cluster starts (also exit 254).
type imageFlag map[string]string

func (f imageFlag) String() string {
	var parts []string
	for k, v := range f {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// imageID is an image id as the Engine prints it (full or short).
var imageID = regexp.MustCompile(`^(sha256:)?[0-9a-f]{12,64}$`)

func (f imageFlag) Set(v string) error {
	for _, one := range strings.Split(v, ",") {
		kind, ref, ok := strings.Cut(strings.TrimSpace(one), "=")
		if !ok || kind == "" || ref == "" {
			return fmt.Errorf("want KIND=IMAGE (%s), not %q", kindList(), one)
		}
		if _, known := imageKinds[kind]; !known {
			return fmt.Errorf("no image kind %q: %s", kind, kindList())
		}
		if _, dup := f[kind]; dup {
			return fmt.Errorf("%s= given twice", kind)
		}
		if !imageID.MatchString(ref) {
			if _, err := reference.ParseNormalizedNamed(ref); err != nil {
				return fmt.Errorf("%s=%s: not an image reference (NAME[:TAG][@DIGEST] or an image id): %w", kind, ref, err)
			}
		}
		f[kind] = ref
	}
	return nil
}

func kindList() string {
	var ks []string
	for k, what := range imageKinds {
		ks = append(ks, k+"=IMAGE for "+what)
	}
	sort.Strings(ks)
	return strings.Join(ks, "; ")
}
