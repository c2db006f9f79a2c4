// Package sparse copies file content leaving blocks of zeros as holes: a
// server's preallocated files (etcd's 64 MiB WAL segments, mostly zeros)
// stay as small on disk when fencecheck keeps them (--keep-data) and when
// merge or shrink copies a run that kept them.
package sparse

import (
	"bytes"
	"context"
	"io"
	"os"
)

// Block is the unit of holes: a block of this many zero bytes, at an
// offset it divides, is not written.
const Block = 4096

// BufSize is a good length for Copy's buffer (a multiple of Block).
const BufSize = 16 * Block

// Copy writes size bytes of r into f, an empty file, from its start: each
// block of Block zeros (at a multiple of Block) is left as a hole, and the
// file is given its full length at the end. take, if not nil, is asked
// for each block that is written (its length) before it is written: when
// it says no, Copy stops with fits false, leaving r's remaining content
// unread. It returns the bytes written. ctx is checked between reads. buf
// is its buffer, a multiple of Block long (nil: one of BufSize). r
// holding fewer than size bytes is an error (io.ErrUnexpectedEOF).
func Copy(ctx context.Context, f *os.File, r io.Reader, size int64, take func(n int64) bool, buf []byte) (stored int64, fits bool, err error) {
	if buf == nil {
		buf = make([]byte, BufSize)
	}
	var off int64
	for off < size {
		if err := ctx.Err(); err != nil {
			return stored, false, err
		}
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), size-off)])
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return stored, false, err
		}
		for b := 0; b < n; b += Block {
			block := buf[b:min(b+Block, n)]
			if allZero(block) {
				continue
			}
			if take != nil && !take(int64(len(block))) {
				return stored, false, nil
			}
			stored += int64(len(block))
			if _, err := f.WriteAt(block, off+int64(b)); err != nil {
				return stored, false, err
			}
		}
		off += int64(n)
	}
	// A file that ends in a hole gets its length.
	return stored, true, f.Truncate(size)
}

var zeroBlock [Block]byte

func allZero(b []byte) bool { return bytes.Equal(b, zeroBlock[:len(b)]) }
