package harness

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
	"github.com/fencecheck/fencecheck/internal/verdicts/store"
	"github.com/fencecheck/fencecheck/targets"
)

// UserImageKind is the key of a user's server image (--image target=REF) in
// a cluster's Images and in test.json's images.
const UserImageKind = store.ImageTarget

// userImage checks that the user's image ref is in the local Engine and that
// the target can run from it, and returns how a node's command becomes a
// command for that image: the target's server binary (targets.ImageRunner)
// at the path the image's entry point or command gives a file of that name,
// else the bare name, looked up on the image's PATH. Errors wrap
// targets.ErrBadConfig (exit 254) or ErrHarness.
func userImage(ctx context.Context, eng runtime.Images, t targets.Target, ref string) (func([]string) []string, error) {
	if err := CheckImage(t, ref); err != nil {
		return nil, err
	}
	ir := t.(targets.ImageRunner)
	insp, err := eng.Inspect(ctx, ref)
	if errors.Is(err, runtime.ErrImageNotFound) {
		return nil, fmt.Errorf("%w: --image target=%s: no such image in the local Docker Engine (fencecheck pulls nothing: docker pull, load or build it first)", targets.ErrBadConfig, ref)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: inspect %s: %w", ErrHarness, ref, err)
	}
	bin := ir.ServerBinary()
	named := append(slices.Clone(insp.Entrypoint), insp.Cmd...)
	return func(cmd []string) []string {
		return ServerCommand(cmd, bin, named)
	}, nil
}

// CheckImage says, before anything starts, whether target t can run from a
// user's image ref (targets.ImageRunner), with an error wrapping
// targets.ErrBadConfig.
func CheckImage(t targets.Target, ref string) error {
	if _, ok := t.(targets.ImageRunner); ok {
		return nil
	}
	return fmt.Errorf("%w: --image target=%s: target %s cannot run from your image", targets.ErrBadConfig, ref, t.Name())
}

// ServerCommand is cmd (the target's server binary and its flags) with its
// first word replaced by the path of bin the image names (its entry point
// and command words, in order), else by bin alone (looked up on PATH).
func ServerCommand(cmd []string, bin string, named []string) []string {
	if len(cmd) == 0 {
		return cmd
	}
	out := slices.Clone(cmd)
	out[0] = bin
	for _, w := range named {
		if path.Base(w) == bin {
			out[0] = w
			break
		}
	}
	return out
}
