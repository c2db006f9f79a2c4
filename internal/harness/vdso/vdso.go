// Package vdso skews the wall clock of one running process, from outside,
// without touching the machine's clock: it patches the process's own copy of
// the vDSO (the kernel's user-space clock functions) so that
// clock_gettime(CLOCK_REALTIME), gettimeofday and time return the real time
// plus an offset, while the monotonic clocks stay true. This is the route
// Chaos Mesh's TimeChaos takes; it works for Go programs (etcd, Consul),
// which read the vDSO directly and so ignore libfaketime, and for C programs
// (Redis), whose libc calls the vDSO too.
//
// How: the process is stopped with SIGSTOP; small replacement functions (a
// system call, then the offset added to the seconds) and the offset are
// written into unused space at the end of the vDSO's text; the entry of each
// of the three functions is overwritten with a jump to its replacement; the
// process is resumed. Writes go through /proc/PID/mem, so the vDSO page is
// copied for that process only. Reset writes the saved entries back. The
// state lives in the process itself, so nothing is left once it exits.
//
// Linux on amd64 only; needs root (or CAP_SYS_PTRACE over the process). A
// thread stopped inside the first 12 bytes of a patched function would
// resume into the jump's middle; SIGSTOP makes this vanishingly unlikely but
// not impossible.
package vdso

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrUnsupported: the platform or the process's vDSO cannot be patched.
var ErrUnsupported = errors.New("vdso: clock skew unsupported")

var magic = []byte("FCSKEW01")

// Cave layout: magic, offset (seconds), the original first 16 bytes of each
// patched function, then the replacement functions.
const (
	offMagic  = 0
	offOffset = 8
	offOrig   = 16 // 3 x 16 bytes
	offCode   = 64
	caveSize  = 176
	entrySize = 12 // movabs rax, imm64; jmp rax
)

// patched lists the functions replaced, with their replacement's place in
// the cave and its code (rel is the position of the rip-relative
// displacement to the offset, next the address after that instruction).
var patched = []struct {
	names     []string
	at        int
	code      []byte
	disp, end int
}{
	{
		// clock_gettime(id, ts): syscall; if ok and id is REALTIME (0) or
		// REALTIME_COARSE (5), ts->tv_sec += offset.
		names: []string{"__vdso_clock_gettime", "clock_gettime"}, at: offCode,
		code: []byte{
			0x57, 0x56, // push rdi; push rsi
			0xb8, 0xe4, 0x00, 0x00, 0x00, // mov eax, 228 (clock_gettime)
			0x0f, 0x05, // syscall
			0x5e, 0x5f, // pop rsi; pop rdi
			0x85, 0xc0, // test eax, eax
			0x75, 0x14, // jnz done
			0x83, 0xff, 0x00, // cmp edi, 0
			0x74, 0x05, // je adj
			0x83, 0xff, 0x05, // cmp edi, 5
			0x75, 0x0a, // jne done
			0x48, 0x8b, 0x0d, 0, 0, 0, 0, // adj: mov rcx, [rip+offset]
			0x48, 0x01, 0x0e, // add [rsi], rcx
			0xc3, // done: ret
		},
		disp: 28, end: 32,
	},
	{
		// gettimeofday(tv, tz): syscall; if ok and tv, tv->tv_sec += offset.
		names: []string{"__vdso_gettimeofday", "gettimeofday"}, at: offCode + 48,
		code: []byte{
			0x57,                         // push rdi
			0xb8, 0x60, 0x00, 0x00, 0x00, // mov eax, 96 (gettimeofday)
			0x0f, 0x05, // syscall
			0x5f,       // pop rdi
			0x85, 0xc0, // test eax, eax
			0x75, 0x0f, // jnz done
			0x48, 0x85, 0xff, // test rdi, rdi
			0x74, 0x0a, // jz done
			0x48, 0x8b, 0x0d, 0, 0, 0, 0, // mov rcx, [rip+offset]
			0x48, 0x01, 0x0f, // add [rdi], rcx
			0xc3, // done: ret
		},
		disp: 21, end: 25,
	},
	{
		// time(t): syscall time(NULL) + offset; store in *t if t.
		names: []string{"__vdso_time", "time"}, at: offCode + 80,
		code: []byte{
			0x57,       // push rdi
			0x31, 0xff, // xor edi, edi
			0xb8, 0xc9, 0x00, 0x00, 0x00, // mov eax, 201 (time)
			0x0f, 0x05, // syscall
			0x5f,                         // pop rdi
			0x48, 0x03, 0x05, 0, 0, 0, 0, // add rax, [rip+offset]
			0x48, 0x85, 0xff, // test rdi, rdi
			0x74, 0x03, // jz done
			0x48, 0x89, 0x07, // mov [rdi], rax
			0xc3, // done: ret
		},
		disp: 14, end: 18,
	},
}

// image is a process's vDSO: where it is mapped, its bytes, where the cave
// starts, and its functions' addresses.
type image struct {
	base uint64
	data []byte
	cave uint64
	syms map[string]uint64
}

// Supported returns nil when this platform can patch a process's vDSO
// (linux/amd64), else an error wrapping ErrUnsupported that says why. It
// looks at no process: one's own vDSO may still lack room (SetOffset says).
func Supported() error {
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		return fmt.Errorf("%w on %s/%s (linux/amd64 only)", ErrUnsupported, runtime.GOOS, runtime.GOARCH)
	}
	return nil
}

func load(mem *os.File, pid int) (*image, error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	lo, hi, err := vdsoRange(pid)
	if err != nil {
		return nil, err
	}
	img := &image{base: lo, data: make([]byte, hi-lo), syms: map[string]uint64{}}
	if _, err := mem.ReadAt(img.data, int64(lo)); err != nil {
		return nil, fmt.Errorf("vdso: read process %d: %w", pid, err)
	}
	ef, err := elf.NewFile(bytes.NewReader(img.data))
	if err != nil {
		return nil, fmt.Errorf("%w: process %d's vDSO is not ELF: %w", ErrUnsupported, pid, err)
	}
	// The cave starts after everything the ELF image uses.
	var used uint64
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOBITS && s.Offset+s.Size > used {
			used = s.Offset + s.Size
		}
	}
	for _, p := range ef.Progs {
		if p.Off+p.Filesz > used {
			used = p.Off + p.Filesz
		}
	}
	shoff := binary.LittleEndian.Uint64(img.data[0x28:])
	shentsize := uint64(binary.LittleEndian.Uint16(img.data[0x3a:]))
	shnum := uint64(binary.LittleEndian.Uint16(img.data[0x3c:]))
	used = max(used, shoff+shentsize*shnum)
	used = (used + 15) &^ 15
	if used+caveSize > uint64(len(img.data)) {
		return nil, fmt.Errorf("%w: no room in process %d's vDSO (%d of %d bytes used)", ErrUnsupported, pid, used, len(img.data))
	}
	img.cave = lo + used
	syms, err := ef.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("%w: vDSO symbols: %w", ErrUnsupported, err)
	}
	for _, s := range syms {
		img.syms[s.Name] = lo + s.Value
	}
	return img, nil
}

func (img *image) symbol(names []string) (uint64, bool) {
	for _, n := range names {
		if a, ok := img.syms[n]; ok {
			return a, true
		}
	}
	return 0, false
}

func (img *image) bytesAt(addr uint64, n int) []byte {
	off := addr - img.base
	return img.data[off : off+uint64(n)]
}

func (img *image) patchedAlready() bool {
	return bytes.Equal(img.bytesAt(img.cave+offMagic, len(magic)), magic)
}

// vdsoRange reads the vDSO's mapping from /proc/PID/maps.
func vdsoRange(pid int) (uint64, uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("vdso: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasSuffix(line, "[vdso]") {
			continue
		}
		a, b, _ := strings.Cut(strings.Fields(line)[0], "-")
		lo, err1 := strconv.ParseUint(a, 16, 64)
		hi, err2 := strconv.ParseUint(b, 16, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("vdso: bad maps line %q", line)
		}
		return lo, hi, nil
	}
	return 0, 0, fmt.Errorf("%w: process %d has no vDSO", ErrUnsupported, pid)
}

// SetOffset makes the wall clock of process pid run offset ahead (negative:
// behind), whole seconds. It patches the process on the first call and only
// changes the offset on later ones.
func SetOffset(pid int, offset time.Duration) error {
	return stopped(pid, func(mem *os.File) error {
		img, err := load(mem, pid)
		if err != nil {
			return err
		}
		sec := make([]byte, 8)
		binary.LittleEndian.PutUint64(sec, uint64(int64(offset/time.Second)))
		if img.patchedAlready() {
			return writeAt(mem, img.cave+offOffset, sec)
		}
		cave := make([]byte, caveSize)
		copy(cave[offMagic:], magic)
		copy(cave[offOffset:], sec)
		entries := make([]uint64, len(patched))
		for i, p := range patched {
			entry, ok := img.symbol(p.names)
			if !ok {
				return fmt.Errorf("%w: vDSO has no %s", ErrUnsupported, p.names[0])
			}
			entries[i] = entry
			copy(cave[offOrig+16*i:], img.bytesAt(entry, 16))
			code := append([]byte(nil), p.code...)
			rel := int64(img.cave+offOffset) - int64(img.cave+uint64(p.at)+uint64(p.end))
			binary.LittleEndian.PutUint32(code[p.disp:], uint32(int32(rel)))
			copy(cave[p.at:], code)
		}
		// The cave first, then the jumps into it.
		if err := writeAt(mem, img.cave, cave); err != nil {
			return err
		}
		for i, p := range patched {
			jmp := []byte{0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xe0}
			binary.LittleEndian.PutUint64(jmp[2:], img.cave+uint64(p.at))
			if err := writeAt(mem, entries[i], jmp); err != nil {
				return err
			}
		}
		return nil
	})
}

// Reset restores the process's vDSO entries, so its clock is true again. A
// process that was never patched is left alone.
func Reset(pid int) error {
	return stopped(pid, func(mem *os.File) error {
		img, err := load(mem, pid)
		if err != nil {
			return err
		}
		if !img.patchedAlready() {
			return nil
		}
		for i, p := range patched {
			entry, ok := img.symbol(p.names)
			if !ok {
				continue
			}
			if err := writeAt(mem, entry, img.bytesAt(img.cave+uint64(offOrig+16*i), entrySize)); err != nil {
				return err
			}
		}
		// The cave's code stays: a thread stopped inside a replacement
		// function (in its system call, most often: a busy process spends
		// its clock calls there while skewed) resumes into it. Its offset
		// becomes 0, then the magic goes, so that SetOffset patches anew.
		if err := writeAt(mem, img.cave+offOffset, make([]byte, 8)); err != nil {
			return err
		}
		return writeAt(mem, img.cave+offMagic, make([]byte, len(magic)))
	})
}

// Offset returns the offset installed in process pid (0 if none).
func Offset(pid int) (time.Duration, error) {
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return 0, fmt.Errorf("vdso: %w", err)
	}
	defer mem.Close()
	img, err := load(mem, pid)
	if err != nil {
		return 0, err
	}
	if !img.patchedAlready() {
		return 0, nil
	}
	return time.Duration(int64(binary.LittleEndian.Uint64(img.bytesAt(img.cave+offOffset, 8)))) * time.Second, nil
}

func writeAt(mem *os.File, addr uint64, b []byte) error {
	if _, err := mem.WriteAt(b, int64(addr)); err != nil {
		return fmt.Errorf("vdso: write at %#x: %w", addr, err)
	}
	return nil
}

// stopped runs f with the process stopped (SIGSTOP, then SIGCONT), unless
// it was stopped already, in which case it stays so.
func stopped(pid int, f func(mem *os.File) error) error {
	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", pid), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("vdso: %w", err)
	}
	defer mem.Close()
	already, err := isStopped(pid)
	if err != nil {
		return err
	}
	if !already {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("vdso: stop %d: %w", pid, err)
		}
		defer syscall.Kill(pid, syscall.SIGCONT)
		deadline := time.Now().Add(2 * time.Second)
		for {
			st, err := isStopped(pid)
			if err != nil {
				return err
			}
			if st {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("vdso: process %d did not stop", pid)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return f(mem)
}

// isStopped reports whether every thread of the process is stopped (state T).
func isStopped(pid int) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false, fmt.Errorf("vdso: %w", err)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue // the thread ended
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
			return false, nil
		}
	}
	return true, nil
}
