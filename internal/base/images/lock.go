package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// LockDir is where the build locks live: one file per image tag, under the
// user's cache directory (not a shared temporary directory, where another
// user could plant a link), or under the temporary directory when there is
// no cache directory.
func LockDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "fencecheck", "image-locks")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("fencecheck-image-locks-%d", os.Getuid()))
}

// lockPoll is how often a process waiting for another's build tries the
// lock again.
const lockPoll = 250 * time.Millisecond

// lockRef takes the build lock of one image tag, shared by every fencecheck
// process of this user on this machine: two processes that lack the same
// image (the shards of a matrix, the tests of a suite, a background
// `images build` beside them) build it once, the second waiting for the
// first and then finding the image there. The lock is an flock(2) on a
// file of LockDir, so a process that dies releases it; waiting ends with
// ctx. waiting is called once, when another process holds the lock.
func lockRef(ctx context.Context, ref string, waiting func(path string)) (unlock func(), err error) {
	dir := LockDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("images: build lock: %w", err)
	}
	path := filepath.Join(dir, hashOf([]byte(ref))+".lock")
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("images: build lock %s: %w", path, err)
	}
	told := false
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { unix.Close(fd) }, nil // closing releases the lock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			unix.Close(fd)
			return nil, fmt.Errorf("images: build lock %s: %w", path, err)
		}
		if !told && waiting != nil {
			waiting(path)
			told = true
		}
		select {
		case <-ctx.Done():
			unix.Close(fd)
			return nil, fmt.Errorf("images: waiting for another process's build of %s: %w", ref, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}
