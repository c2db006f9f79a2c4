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
	"math"
	"math/bits"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// ErrUnsupported: the platform or the process's vDSO cannot be patched.
var ErrUnsupported = errors.New("vdso: clock skew unsupported")

var magic = []byte("FCSKEW02")

// The cave: magic, the wall clock's and the monotonic clock's parameters
// (params: three words each), the original first 16 bytes of each patched
// function, then the replacement functions, whose source is cave.asm
// (TestCaveMatchesSource assembles it and compares). A clock reads
//
//	fbase + ((t - rbase) * mult) >> 32
//
// t the true reading in nanoseconds: identity is {0, 0, 1<<32}, an offset o
// is {0, o, 1<<32}, a rate r from now on is {now, fake now, r<<32}. The wall
// parameters serve CLOCK_REALTIME and CLOCK_REALTIME_COARSE, gettimeofday
// and time; the monotonic ones CLOCK_MONOTONIC and CLOCK_MONOTONIC_COARSE.
// Every other clock is read true, through the system call.
const (
	offMagic  = 0
	offWall   = 8
	offMono   = 32
	offOrig   = 56 // 3 x 16 bytes
	offCode   = 104
	entrySize = 12 // movabs rax, imm64; jmp rax
)

// code is the cave from offCode on (cave.asm, assembled).
var code = []byte{
	0x49, 0x2b, 0x00, 0x49, 0xf7, 0x68, 0x10, 0x48, 0x0f, 0xac, 0xd0, 0x20, 0x49, 0x03, 0x40, 0x08,
	0xc3, 0x31, 0xd2, 0xb9, 0x00, 0xca, 0x9a, 0x3b, 0x48, 0xf7, 0xf1, 0xc3, 0x57, 0x56, 0xb8, 0xe4,
	0x00, 0x00, 0x00, 0x0f, 0x05, 0x5e, 0x5f, 0x85, 0xc0, 0x75, 0x22, 0x4c, 0x8d, 0x05, 0x6e, 0xff,
	0xff, 0xff, 0x83, 0xff, 0x00, 0x74, 0x17, 0x83, 0xff, 0x05, 0x74, 0x12, 0x4c, 0x8d, 0x05, 0x75,
	0xff, 0xff, 0xff, 0x83, 0xff, 0x01, 0x74, 0x06, 0x83, 0xff, 0x06, 0x74, 0x01, 0xc3, 0x48, 0x69,
	0x06, 0x00, 0xca, 0x9a, 0x3b, 0x48, 0x03, 0x46, 0x08, 0xe8, 0xa2, 0xff, 0xff, 0xff, 0xe8, 0xae,
	0xff, 0xff, 0xff, 0x48, 0x89, 0x06, 0x48, 0x89, 0x56, 0x08, 0x31, 0xc0, 0xc3, 0x57, 0xb8, 0x60,
	0x00, 0x00, 0x00, 0x0f, 0x05, 0x5f, 0x85, 0xc0, 0x75, 0x3e, 0x48, 0x85, 0xff, 0x74, 0x39, 0x48,
	0x69, 0x07, 0x00, 0xca, 0x9a, 0x3b, 0x48, 0x69, 0x4f, 0x08, 0xe8, 0x03, 0x00, 0x00, 0x48, 0x01,
	0xc8, 0x4c, 0x8d, 0x05, 0x08, 0xff, 0xff, 0xff, 0xe8, 0x63, 0xff, 0xff, 0xff, 0xe8, 0x6f, 0xff,
	0xff, 0xff, 0x48, 0x89, 0x07, 0x48, 0x89, 0xd0, 0x31, 0xd2, 0xb9, 0xe8, 0x03, 0x00, 0x00, 0x48,
	0xf7, 0xf1, 0x48, 0x89, 0x47, 0x08, 0x31, 0xc0, 0xc3, 0x57, 0x31, 0xff, 0xb8, 0xc9, 0x00, 0x00,
	0x00, 0x0f, 0x05, 0x48, 0x69, 0xc0, 0x00, 0xca, 0x9a, 0x3b, 0x4c, 0x8d, 0x05, 0xcf, 0xfe, 0xff,
	0xff, 0xe8, 0x2a, 0xff, 0xff, 0xff, 0xe8, 0x36, 0xff, 0xff, 0xff, 0x5f, 0x48, 0x85, 0xff, 0x74,
	0x03, 0x48, 0x89, 0x07, 0xc3,
}

// caveSize is the room the cave takes in the vDSO.
var caveSize = offCode + len(code)

// patched lists the functions replaced, each with its replacement's place
// in the cave (cave.asm's labels).
var patched = []struct {
	names []string
	at    int
}{
	{names: []string{"__vdso_clock_gettime", "clock_gettime"}, at: 0x84},
	{names: []string{"__vdso_gettimeofday", "gettimeofday"}, at: 0xd5},
	{names: []string{"__vdso_time", "time"}, at: 0x121},
}

// params is one clock's parameters in the cave.
type params struct {
	rbase, fbase int64
	mult         uint64
}

// one is a rate of 1 in params.mult.
const one = 1 << 32

var identity = params{mult: one}

// at is what the clock reads when the true clock reads t.
func (p params) at(t int64) int64 {
	hi, lo := bits.Mul64(uint64(t-p.rbase), p.mult)
	if t < p.rbase { // a signed product: subtract mult<<64 back
		hi -= p.mult
	}
	return int64(hi<<32|lo>>32) + p.fbase
}

// rate is the clock's rate.
func (p params) rate() float64 { return float64(p.mult) / one }

// from is a clock that reads what p reads at true time t and from then on
// runs at rate r.
func (p params) from(t int64, r float64) params {
	return params{rbase: t, fbase: p.at(t), mult: uint64(math.Round(r * one))}
}

func (p params) bytes() []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint64(b, uint64(p.rbase))
	binary.LittleEndian.PutUint64(b[8:], uint64(p.fbase))
	binary.LittleEndian.PutUint64(b[16:], p.mult)
	return b
}

func readParams(b []byte) params {
	return params{
		rbase: int64(binary.LittleEndian.Uint64(b)),
		fbase: int64(binary.LittleEndian.Uint64(b[8:])),
		mult:  binary.LittleEndian.Uint64(b[16:]),
	}
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
	if used+uint64(caveSize) > uint64(len(img.data)) {
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

// Clock is what a process's clocks read: its wall clock Offset ahead of the
// true time (negative: behind), and both its wall and its monotonic clock
// running Rate times as fast as true time (1: true rate).
type Clock struct {
	Offset time.Duration
	Rate   float64
}

// MinRate and MaxRate bound a rate: slower than a hundredth or faster than
// a hundredfold is no longer a clock that drifts.
const (
	MinRate = 0.01
	MaxRate = 100
)

// SetOffset makes the wall clock of process pid run offset ahead (negative:
// behind), at the true rate; the monotonic clock is left as it is. It
// patches the process on the first call and only changes the parameters on
// later ones.
func SetOffset(pid int, offset time.Duration) error {
	return update(pid, func(now trueNow, wall, mono params) (params, params) {
		return params{fbase: int64(offset), mult: one}, mono
	})
}

// SetRate makes both clocks of process pid run rate times as fast as true
// time from now on, each continuing from what it reads now (a clock never
// jumps, and the monotonic clock never goes back). A wall offset set before
// is kept at this instant and then grows or shrinks with the rate.
func SetRate(pid int, rate float64) error {
	if math.IsNaN(rate) || rate < MinRate || rate > MaxRate {
		return fmt.Errorf("vdso: rate %g out of [%g, %g]", rate, float64(MinRate), float64(MaxRate))
	}
	return update(pid, func(now trueNow, wall, mono params) (params, params) {
		return wall.from(now.wall, rate), mono.from(now.mono, rate)
	})
}

// Reset makes process pid's clocks true again: the wall clock reads the true
// time (it jumps back to it), both clocks run at the true rate. A monotonic
// clock that a rate left ahead of or behind the true one keeps that lead or
// lag (going back would break the process's timers; jumping forward would
// look like a pause); a process whose monotonic clock is true is unpatched.
// A process that was never patched is left alone.
func Reset(pid int) error {
	return stopped(pid, func(mem *os.File) error {
		img, err := load(mem, pid)
		if err != nil {
			return err
		}
		if !img.patchedAlready() {
			return nil
		}
		mono := readParams(img.bytesAt(img.cave+offMono, 24))
		if mono != identity {
			now := readTrue()
			return writeParams(mem, img, identity, mono.from(now.mono, 1))
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
		// its clock calls there while skewed) resumes into it. Its
		// parameters become the identity, then the magic goes, so that the
		// next call patches anew.
		if err := writeParams(mem, img, identity, identity); err != nil {
			return err
		}
		return writeAt(mem, img.cave+offMagic, make([]byte, len(magic)))
	})
}

// Read returns what process pid's clocks read now: the wall clock's offset
// from the true time (to the microsecond) and its rate; the zero offset
// and rate 1 when it is not patched.
func Read(pid int) (Clock, error) {
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return Clock{}, fmt.Errorf("vdso: %w", err)
	}
	defer mem.Close()
	img, err := load(mem, pid)
	if err != nil {
		return Clock{}, err
	}
	if !img.patchedAlready() {
		return Clock{Rate: 1}, nil
	}
	wall := readParams(img.bytesAt(img.cave+offWall, 24))
	now := readTrue().wall
	return Clock{Offset: time.Duration(wall.at(now) - now).Round(time.Microsecond), Rate: wall.rate()}, nil
}

// Offset returns the wall-clock offset installed in process pid (0 if
// none), to the microsecond.
func Offset(pid int) (time.Duration, error) {
	c, err := Read(pid)
	return c.Offset, err
}

// trueNow is a true reading of both clocks, in nanoseconds.
type trueNow struct{ wall, mono int64 }

// readTrue reads the true clocks through the system call: this process's
// own vDSO is never patched, but the system call needs no vDSO at all. The
// clocks are the machine's: a container has no clocks of its own.
func readTrue() trueNow {
	var w, m syscall.Timespec
	clockGettime(0, &w) // CLOCK_REALTIME
	clockGettime(1, &m) // CLOCK_MONOTONIC
	return trueNow{wall: w.Nano(), mono: m.Nano()}
}

func clockGettime(id int, ts *syscall.Timespec) {
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(ts)), 0)
}

// update patches process pid (once) and sets its clocks' parameters to
// what f makes of the current ones (the identity in a fresh patch), with
// the process stopped.
func update(pid int, f func(now trueNow, wall, mono params) (params, params)) error {
	return stopped(pid, func(mem *os.File) error {
		img, err := load(mem, pid)
		if err != nil {
			return err
		}
		if img.patchedAlready() {
			wall, mono := f(readTrue(), readParams(img.bytesAt(img.cave+offWall, 24)), readParams(img.bytesAt(img.cave+offMono, 24)))
			return writeParams(mem, img, wall, mono)
		}
		entries := make([]uint64, len(patched))
		for i, p := range patched {
			entry, ok := img.symbol(p.names)
			if !ok {
				return fmt.Errorf("%w: vDSO has no %s", ErrUnsupported, p.names[0])
			}
			entries[i] = entry
		}
		wall, mono := f(readTrue(), identity, identity)
		cave := make([]byte, caveSize)
		copy(cave[offMagic:], magic)
		copy(cave[offWall:], wall.bytes())
		copy(cave[offMono:], mono.bytes())
		for i, entry := range entries {
			copy(cave[offOrig+16*i:], img.bytesAt(entry, 16))
		}
		copy(cave[offCode:], code)
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

// writeParams writes both clocks' parameters into a patched process.
func writeParams(mem *os.File, img *image, wall, mono params) error {
	if err := writeAt(mem, img.cave+offWall, wall.bytes()); err != nil {
		return err
	}
	return writeAt(mem, img.cave+offMono, mono.bytes())
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
