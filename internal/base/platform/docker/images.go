package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/fencecheck/fencecheck/internal/base/runtime"
)

// Build builds an image with the legacy builder (which needs no registry),
// removing its intermediate containers even when the build fails, and tags
// it. An error the build reports comes with the last lines the build
// printed before it.
func (e *Engine) Build(ctx context.Context, buildContext io.Reader, tag string, args map[string]string) error {
	var buildArgs map[string]*string
	if len(args) > 0 {
		buildArgs = make(map[string]*string, len(args))
		for k, v := range args {
			buildArgs[k] = &v
		}
	}
	resp, err := e.cli.ImageBuild(ctx, buildContext, build.ImageBuildOptions{
		Tags:        []string{tag},
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
		BuildArgs:   buildArgs,
	})
	if err != nil {
		return fmt.Errorf("docker build: %w", err)
	}
	defer resp.Body.Close()
	return readBuildStream(resp.Body)
}

// Import imports a root file system as an image tagged tag.
func (e *Engine) Import(ctx context.Context, rootfs io.Reader, tag string, changes []string, comment string) error {
	rc, err := e.cli.ImageImport(ctx, image.ImportSource{Source: rootfs, SourceName: "-"}, tag, image.ImportOptions{
		Changes: changes,
		Message: comment,
	})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer rc.Close()
	return readBuildStream(rc)
}

// readBuildStream reads the Engine's JSON progress stream and returns the
// first error it reports, with the last lines the build printed before it
// (a failed RUN's output: a compiler's errors).
func readBuildStream(r io.Reader) error {
	dec := json.NewDecoder(bufio.NewReader(r))
	var tail lastOutput
	for {
		var m struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading build output: %w", err)
		}
		tail.add(m.Stream)
		if m.Error != "" {
			if out := tail.String(); out != "" {
				return fmt.Errorf("%s; the build's last output:\n%s", m.Error, out)
			}
			return errors.New(m.Error)
		}
	}
}

// lastOutput keeps the last 2 KiB of a build's output, for its error.
type lastOutput struct{ b []byte }

func (t *lastOutput) add(s string) {
	t.b = append(t.b, s...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
}

func (t *lastOutput) String() string { return strings.TrimSpace(string(t.b)) }

// Inspect describes an image; an error wrapping runtime.ErrImageNotFound,
// with the Engine's message, when the Engine has none of that reference.
func (e *Engine) Inspect(ctx context.Context, ref string) (runtime.ImageInfo, error) {
	insp, err := e.cli.ImageInspect(ctx, ref)
	if client.IsErrNotFound(err) {
		return runtime.ImageInfo{}, notFound{err, runtime.ErrImageNotFound}
	}
	if err != nil {
		return runtime.ImageInfo{}, err
	}
	info := runtime.ImageInfo{ID: insp.ID}
	if insp.Config != nil {
		info.Entrypoint, info.Cmd = insp.Config.Entrypoint, insp.Config.Cmd
	}
	return info, nil
}

// notFound is the Engine's not-found error, as it says it, that is also
// the sentinel of what was not found.
type notFound struct{ engine, sentinel error }

func (e notFound) Error() string   { return e.engine.Error() }
func (e notFound) Unwrap() []error { return []error{e.sentinel, e.engine} }

// List lists the images that carry label, one summary per image.
func (e *Engine) List(ctx context.Context, label string) ([]runtime.ImageSummary, error) {
	sums, err := e.cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, err
	}
	out := make([]runtime.ImageSummary, len(sums))
	for i, s := range sums {
		out[i] = runtime.ImageSummary{ID: s.ID, Tags: s.RepoTags, Labels: s.Labels, Size: s.Size, Created: time.Unix(s.Created, 0)}
	}
	return out, nil
}

// Remove removes an image and its untagged parents, unless a container
// uses it.
func (e *Engine) Remove(ctx context.Context, ref string) error {
	_, err := e.cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true})
	return err
}

// Save writes the archive `docker save` writes of ref to w.
func (e *Engine) Save(ctx context.Context, ref string, w io.Writer) error {
	rc, err := e.cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(w, rc)
	return err
}

// Load loads an archive of `docker save`, and returns what the Engine says
// it loaded (its "Loaded image: TAG" and "Loaded image ID: ID" lines) and
// the first error it reports while it loads.
func (e *Engine) Load(ctx context.Context, archive io.Reader) ([]string, error) {
	resp, err := e.cli.ImageLoad(ctx, archive, client.ImageLoadWithQuiet(true))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return readLoadStream(resp.Body)
}

// readLoadStream reads the Engine's answer to a load: the tags and image
// IDs it loaded, and the first error it reports.
func readLoadStream(r io.Reader) ([]string, error) {
	dec := json.NewDecoder(r)
	var loaded []string
	for {
		var m struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return loaded, nil
		} else if err != nil {
			return loaded, fmt.Errorf("reading the Engine's answer: %w", err)
		}
		if m.Error != "" {
			return loaded, errors.New(m.Error)
		}
		for _, line := range strings.Split(m.Stream, "\n") {
			if id, ok := strings.CutPrefix(line, "Loaded image ID: "); ok {
				loaded = append(loaded, strings.TrimSpace(id))
			} else if ref, ok := strings.CutPrefix(line, "Loaded image: "); ok {
				loaded = append(loaded, strings.TrimSpace(ref))
			}
		}
	}
}

// ReadFile reads one file from an image, through a container created (never
// started) from it, labelled fencecheck=1 so that Clean removes it if this
// does not, and removed again.
func (e *Engine) ReadFile(ctx context.Context, img, file string) ([]byte, error) {
	c, err := e.cli.ContainerCreate(ctx, &container.Config{Image: img, Cmd: []string{"none"}, Labels: map[string]string{runtime.LabelManaged: "1"}}, nil, nil, nil, "")
	if err != nil {
		return nil, err
	}
	defer e.cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
	rc, _, err := e.cli.CopyFromContainer(ctx, c.ID, file)
	if errdefs.IsNotFound(err) {
		return nil, notFound{err, fs.ErrNotExist}
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w", file, fs.ErrNotExist)
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg && path.Base(h.Name) == path.Base(file) {
			return io.ReadAll(tr)
		}
	}
}
