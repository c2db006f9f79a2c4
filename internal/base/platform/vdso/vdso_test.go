package vdso

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the process to skew: with this variable set it
// prints, every 20 ms, its wall clock (seconds) and its monotonic clock
// (milliseconds since it started), both as its vDSO gives them, beside the
// true clocks at that moment (nanoseconds) as the system call gives them,
// which no patch of the vDSO changes. The tests compare a line's two pairs:
// a line printed late, or read late, on a loaded machine is as right as one
// printed at once.
const childEnv = "FENCECHECK_VDSO_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		start := time.Now()
		for {
			// Its vDSO's clocks between two true readings less than a
			// millisecond apart: none of the four taken long after the
			// others.
			for {
				before := readTrue()
				now := time.Now()
				after := readTrue()
				if after.mono-before.mono < int64(time.Millisecond) {
					fmt.Printf("%d %d %d %d\n", now.Unix(), now.Sub(start).Milliseconds(), before.wall, before.mono)
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	os.Exit(m.Run())
}

// clockLine is one line of the child: its vDSO's wall clock (s) and
// monotonic clock (ms), and the true ones (ns) at that moment.
type clockLine struct{ wall, monoMS, trueWall, trueMono int64 }

// offset is how far the child's wall clock was off the true one, in whole
// seconds (each is cut to the second: ±1 of the truth).
func (l clockLine) offset() int64 { return l.wall - l.trueWall/int64(time.Second) }

func TestSkewAndResetAGoProcess(t *testing.T) {
	pid, after := child(t)
	// latest is a line the child printed after now.
	latest := func() clockLine { return after(readTrue().mono) }
	before := latest()
	if d := before.offset(); d < -1 || d > 1 {
		t.Fatalf("child clock off by %ds before any skew", d)
	}
	if err := SetOffset(pid, time.Hour); err != nil {
		t.Fatal(err)
	}
	ahead := latest()
	if d := ahead.offset(); d < 3599 || d > 3601 {
		t.Errorf("after +1h the child's clock is %ds ahead", d)
	}
	if off, err := Offset(pid); err != nil || off != time.Hour {
		t.Errorf("Offset = %s, %v", off, err)
	}
	// A second call only changes the offset.
	if err := SetOffset(pid, -30*time.Second); err != nil {
		t.Fatal(err)
	}
	behind := latest()
	if d := behind.offset(); d < -31 || d > -29 {
		t.Errorf("after -30s the child's clock is %ds off", d)
	}
	// The monotonic clock never moved.
	if behind.monoMS < ahead.monoMS || ahead.monoMS < before.monoMS {
		t.Errorf("monotonic clock went back: %d %d %d", before.monoMS, ahead.monoMS, behind.monoMS)
	}
	if err := Reset(pid); err != nil {
		t.Fatal(err)
	}
	reset := latest()
	if d := reset.offset(); d < -1 || d > 1 {
		t.Errorf("after Reset the child's clock is %ds off", d)
	}
	if off, _ := Offset(pid); off != 0 {
		t.Errorf("Offset after Reset = %s", off)
	}
	// Reset of a clean process does nothing; the process still runs.
	if err := Reset(pid); err != nil {
		t.Fatal(err)
	}
	if st, _ := isStopped(pid); st {
		t.Errorf("the process was left stopped")
	}
	if l := latest(); l.monoMS <= reset.monoMS {
		t.Errorf("the child stopped printing")
	}
}

// child starts the test binary as a clock-printing child and returns its
// pid and after, which returns the first line the child printed after the
// true monotonic time mono (ns), waiting for it.
func child(t *testing.T) (int, func(mono int64) clockLine) {
	t.Helper()
	if os.Geteuid() != 0 && os.Getenv("CI") == "" {
		t.Skip("writing another process's memory needs root")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan clockLine, 1000)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l clockLine
			if _, err := fmt.Sscan(sc.Text(), &l.wall, &l.monoMS, &l.trueWall, &l.trueMono); err == nil {
				lines <- l
			}
		}
		close(lines)
	}()
	return cmd.Process.Pid, func(mono int64) clockLine {
		// 30 s: the child prints every 20 ms; only one that stopped
		// (or a machine stalled for that long) makes it wait so.
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("the child ended")
				}
				if l.trueMono > mono {
					return l
				}
			case <-timeout:
				t.Fatal("the child printed nothing new for 30s")
			}
		}
	}
}

// observedRate is the rate of the child's monotonic clock against the true
// one, over at least d of true time, from lines printed after now (each
// line holds both clocks, so how late it was printed or read does not
// matter).
func observedRate(after func(mono int64) clockLine, d time.Duration) float64 {
	a := after(readTrue().mono)
	b := after(a.trueMono + int64(d))
	return float64(b.monoMS-a.monoMS) / (float64(b.trueMono-a.trueMono) / float64(time.Millisecond))
}

func TestRateOfAGoProcess(t *testing.T) {
	pid, after := child(t)
	if r := observedRate(after, time.Second); r < 0.8 || r > 1.2 {
		t.Fatalf("before any rate the child's clock runs at %.2f", r)
	}
	for _, rate := range []float64{3, 0.25} {
		if err := SetRate(pid, rate); err != nil {
			t.Fatal(err)
		}
		if c, err := Read(pid); err != nil || math.Abs(c.Rate-rate) > 1e-6 {
			t.Errorf("Read after SetRate(%g) = %+v, %v", rate, c, err)
		}
		if r := observedRate(after, 2*time.Second); math.Abs(r-rate)/rate > 0.2 {
			t.Errorf("SetRate(%g): the child's monotonic clock runs at %.2f", rate, r)
		}
	}
	// After 3x then 0.25x the wall clock is off; Reset makes it true, and
	// the monotonic clock neither goes back nor leaves its rate of 1.
	before := after(readTrue().mono)
	if err := Reset(pid); err != nil {
		t.Fatal(err)
	}
	reset := after(readTrue().mono)
	if d := reset.offset(); d < -1 || d > 1 {
		t.Errorf("after Reset the child's wall clock is %ds off", d)
	}
	if reset.monoMS < before.monoMS {
		t.Errorf("the monotonic clock went back at Reset: %d then %d", before.monoMS, reset.monoMS)
	}
	if r := observedRate(after, time.Second); r < 0.8 || r > 1.2 {
		t.Errorf("after Reset the child's clock runs at %.2f", r)
	}
	if c, err := Read(pid); err != nil || c.Rate != 1 || c.Offset != 0 {
		t.Errorf("Read after Reset = %+v, %v", c, err)
	}
	if err := SetRate(pid, 0); err == nil {
		t.Errorf("SetRate(0) was taken")
	}
}

func TestParams(t *testing.T) {
	half := params{rbase: 1000, fbase: 5000, mult: one / 2}
	for _, c := range []struct{ t, want int64 }{
		{1000, 5000}, {3000, 6000}, {0, 4500}, {1 << 61, 5000 + (1<<61-1000)/2},
	} {
		if got := half.at(c.t); got != c.want {
			t.Errorf("at(%d) = %d, want %d", c.t, got, c.want)
		}
	}
	off := params{fbase: -int64(time.Hour), mult: one}
	if now := time.Now().UnixNano(); off.at(now) != now-int64(time.Hour) {
		t.Errorf("an offset is not an offset")
	}
	cont := half.from(3000, 4)
	if cont.at(3000) != 6000 || cont.at(3010) != 6040 {
		t.Errorf("from: %d %d", cont.at(3000), cont.at(3010))
	}
}

// TestCaveMatchesSource assembles cave.asm with the GNU assembler and
// compares it with the bytes and labels the package writes.
func TestCaveMatchesSource(t *testing.T) {
	as, err1 := exec.LookPath("as")
	objcopy, err2 := exec.LookPath("objcopy")
	if err1 != nil || err2 != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("binutils (as, objcopy) are missing")
		}
		t.Skip("binutils (as, objcopy) are missing")
	}
	dir := t.TempDir()
	obj, bin := dir+"/cave.o", dir+"/cave.bin"
	if out, err := exec.Command(as, "--64", "-o", obj, "cave.asm").CombinedOutput(); err != nil {
		t.Fatalf("as: %v\n%s", err, out)
	}
	if out, err := exec.Command(objcopy, "-O", "binary", "-j", ".text", obj, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != caveSize || !bytes.Equal(b[offCode:], code) || !bytes.Equal(b[:len(magic)], magic) {
		t.Fatalf("cave.asm assembles to %d bytes that differ from the package's %d", len(b), caveSize)
	}
	out, err := exec.Command("nm", obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]int{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			v, _ := strconv.ParseInt(f[0], 16, 64)
			labels[f[2]] = int(v)
		}
	}
	want := map[string]int{"wall": offWall, "mono": offMono, "orig": offOrig, "adjust": offCode,
		"clock_gettime": patched[0].at, "gettimeofday": patched[1].at, "time": patched[2].at}
	for name, at := range want {
		if labels[name] != at {
			t.Errorf("label %s at %#x in cave.asm, %#x in the package", name, labels[name], at)
		}
	}
}
