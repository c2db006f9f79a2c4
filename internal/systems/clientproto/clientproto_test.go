package clientproto

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/systems/resources"
	"github.com/fencecheck/fencecheck/internal/testkit/bound"
	"github.com/fencecheck/fencecheck/targets"
)

// fake is a client program in POSIX sh that speaks the protocol with a fake
// lock (no lock service): tokens count up from 1. MODE makes it misbehave
// at acquire: "hang" never answers, "exit" exits, "wrongid" answers
// another id, "notoken" leaves the token out, "bigerr" and "bigkind"
// answer an error of 10 MB, "huge" claims 2^63-1 ms left; at remaining:
// "hugeleft" claims 2^63-1 ms, "badremaining" answers garbage; at write:
// "badwrite" answers garbage; at init, "bigname" names itself in 10 MB; at
// held (answered "held": true), "heldfalse" says false and "heldnone"
// leaves "held" out.
// With EXCL=1 the lock excludes: it is a file
// in the program's directory that names the process holding it, and only
// that process may release it (a process that holds nothing is refused:
// "no lock held").
const fake = `#!/bin/sh
n=0
big() { head -c 10485760 /dev/zero | tr '\0' x; }
while read -r line; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
	type=$(printf '%s' "$line" | sed -n 's/.*"type":"\([a-z_-]*\)".*/\1/p')
	case "$type" in
	init)
		if [ "$MODE" = escape ]; then setsid sleep 100 & echo $! > escaped.pid; fi
		name=fake
		[ "$MODE" = bigname ] && name=$(big)
		printf '{"id":%s,"type":"init_ok","implements":["lock"%s],"tokens":true,"name":"%s"}\n' "$id" "$EXTRA" "$name"
		;;
	acquire)
		n=$((n+1))
		if [ "$EXCL" = 1 ] && [ -e lock ] && [ "$(cat lock)" != $$ ]; then
			printf '{"id":%s,"type":"error","kind":"fail","message":"held"}\n' "$id"
			continue
		fi
		[ "$EXCL" = 1 ] && echo $$ > lock
		case "$MODE" in
		bigerr) printf '{"id":%s,"type":"error","kind":"fail","message":"%s"}\n' "$id" "$(big)" ;;
		bigkind) printf '{"id":%s,"type":"error","kind":"%s","message":"m"}\n' "$id" "$(big)" ;;
		huge) printf '{"id":%s,"type":"acquire_ok","token":%s,"remaining_ms":9223372036854775807}\n' "$id" "$n" ;;
		hang) sleep 1000 ;;
		chatty) i=0; while [ $i -lt 40 ]; do echo "debug line $i"; i=$((i+1)); done ;;
		replyexit) printf '{"id":%s,"type":"acquire_ok","token":%s,"remaining_ms":900}\n' "$id" "$n"; exit 0 ;;
		exit) echo "fake: out of cheese" >&2; exit 7 ;;
		wrongid) printf '{"id":%s,"type":"acquire_ok","token":%s,"remaining_ms":900}\n' "$((id+5))" "$n" ;;
		notoken) printf '{"id":%s,"type":"acquire_ok","remaining_ms":900}\n' "$id" ;;
		*) printf '{"id":%s,"type":"acquire_ok","token":%s,"remaining_ms":900}\n' "$id" "$n" ;;
		esac
		;;
	remaining)
		case "$MODE" in
		hugeleft) printf '{"id":%s,"type":"remaining_ok","remaining_ms":9223372036854775807}\n' "$id" ;;
		badremaining) echo garbage ;;
		*) printf '{"id":%s,"type":"remaining_ok","remaining_ms":800}\n' "$id" ;;
		esac
		;;
	held)
		case "$MODE" in
		heldfalse) printf '{"id":%s,"type":"held_ok","held":false}\n' "$id" ;;
		heldnone) printf '{"id":%s,"type":"held_ok"}\n' "$id" ;;
		*) printf '{"id":%s,"type":"held_ok","held":true}\n' "$id" ;;
		esac
		;;
	release)
		if [ "$EXCL" = 1 ]; then
			if [ "$(cat lock 2>/dev/null)" != $$ ]; then
				printf '{"id":%s,"type":"error","kind":"fail","message":"no lock held"}\n' "$id"
				continue
			fi
			rm -f lock
		fi
		printf '{"id":%s,"type":"release_ok"}\n' "$id"
		;;
	read)
		if [ "$MODE" = novalue ]; then printf '{"id":%s,"type":"read_ok"}\n' "$id"
		else printf '{"id":%s,"type":"read_ok","value":[1,2]}\n' "$id"; fi
		;;
	write)
		[ "$MODE" = badwrite ] && { echo garbage; continue; }
		case "$line" in
		*'"token":1,'*) printf '{"id":%s,"type":"write_ok","result":"fenced"}\n' "$id" ;;
		*) printf '{"id":%s,"type":"write_ok","result":"ok","rev":42}\n' "$id" ;;
		esac
		;;
	*) printf '{"id":%s,"type":"error","kind":"fail","message":"unknown request"}\n' "$id" ;;
	esac
done
`

func program(t *testing.T, mode string, extra ...string) Program {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fake.sh"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"MODE=" + mode}
	if strings.HasPrefix(mode, "excl-") {
		env = []string{"MODE=" + strings.TrimPrefix(mode, "excl-"), "EXCL=1"}
	}
	if len(extra) > 0 {
		env = append(env, "EXTRA=,"+strings.Join(extra, ","))
	}
	return Program{Cmd: []string{"/bin/sh", "fake.sh"}, Dir: dir, Env: env}
}

func testInit() Init {
	return Init{Target: "fake", Endpoints: []string{"nowhere:1"}, TTLMS: 1000, Prefix: "/t", Fencing: "token", RPCTimeoutMS: 2000}
}

func withDeadline(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestLockThroughTheProtocol(t *testing.T) {
	c, err := Dial(context.Background(), program(t, ""), testInit(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for want := int64(1); want <= 3; want++ {
		l, err := c.Acquire(withDeadline(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() != want {
			t.Fatalf("token %d, want %d", l.Token(), want)
		}
		if r := l.Remaining(); r != 800*time.Millisecond {
			t.Fatalf("remaining %s", r)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if c.Name() != "fake" || c.ImplementsResource() {
		t.Fatalf("name %q, resource %v", c.Name(), c.ImplementsResource())
	}
}

// The resource access through the program, the same whether the program
// answers held or not (its leases are then Believers).
func TestResourceAccessThroughTheProtocol(t *testing.T) {
	for _, extra := range [][]string{{`"resource"`}, {`"resource"`, `"held"`}} {
		resourceAccess(t, extra)
	}
}

func resourceAccess(t *testing.T, extra []string) {
	c, err := Dial(context.Background(), program(t, "", extra...), testInit(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.ImplementsResource() {
		t.Fatal("resource not implemented")
	}
	st := c.Access(nil)
	old, _ := c.Acquire(withDeadline(t, 5*time.Second)) // token 1
	cur, _ := c.Acquire(withDeadline(t, 5*time.Second)) // token 2
	got, err := st.Read(context.Background(), resources.Access{Lease: cur, Fencing: targets.FencingToken})
	if err != nil || len(got.List) != 2 {
		t.Fatalf("read %v %v", got, err)
	}
	if rev, err := st.Write(context.Background(), resources.Access{Lease: cur, Fencing: targets.FencingToken}, got, []int64{1, 2, 3}); err != nil || rev != 42 {
		t.Fatalf("write: rev %d, %v", rev, err)
	}
	_, err = st.Write(context.Background(), resources.Access{Lease: old, Fencing: targets.FencingToken}, got, []int64{9})
	if !errors.Is(err, resources.ErrFenced) {
		t.Fatalf("stale write: %v, want fenced", err)
	}
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *Error", err, err)
	}
	return e
}

// A program that exits is retired: the request is info, its stderr is in
// the error, and the next request starts a new process (init again).
func TestExitRetiresAndRestarts(t *testing.T) {
	c, err := Dial(context.Background(), program(t, "exit"), testInit(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Acquire(withDeadline(t, 5*time.Second))
	e := asError(t, err)
	if e.Cause != "exited" || e.Kind != KindInfo || !strings.Contains(e.Message, "out of cheese") || !strings.Contains(e.Message, "exit status 7") {
		t.Fatalf("error %+v", e)
	}
	if _, err := c.Acquire(withDeadline(t, 5*time.Second)); err == nil {
		t.Fatal("the second process exits too: want an error")
	}
	if g, r := c.Process().Gen(), c.Process().Retired(); g != 2 || r != 2 {
		t.Fatalf("gen %d retired %d, want 2 and 2", g, r)
	}
}

// A program that never answers costs the request's deadline and the grace,
// not more; it is killed, and a lease of the killed process is lost.
func TestHangTimesOut(t *testing.T) {
	init := testInit()
	c, err := Dial(context.Background(), program(t, ""), init, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(withDeadline(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// Swap in a hanging program for the next process.
	c.p.prog = program(t, "hang")
	c.p.mu.Lock()
	c.p.retire("test")
	c.p.mu.Unlock()
	if r := l.Remaining(); r != 0 {
		t.Fatalf("remaining of a retired process's lease: %s", r)
	}
	if err := l.Release(context.Background()); err == nil {
		t.Fatal("release of a retired process's lease: want an error")
	}
	// The deadline and its grace end the call, not the hanging program's
	// 1,000 s: a call still waiting at the hang limit (5 minutes, far
	// from any loaded machine's scheduling delay) never heeded them.
	bound.Returns(t, "acquire with a 300ms deadline", func() {
		_, err = c.Acquire(withDeadline(t, 300*time.Millisecond))
	})
	if e := asError(t, err); e.Cause != "timeout" || e.Kind != KindInfo {
		t.Fatalf("error %+v", e)
	}
}

// Replies that break the protocol are reported with their line.
func TestMalformedReplies(t *testing.T) {
	for _, mode := range []string{"wrongid", "notoken"} {
		c, err := Dial(context.Background(), program(t, mode), testInit(), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Acquire(withDeadline(t, 5*time.Second))
		e := asError(t, err)
		if e.Cause != "malformed" || e.Kind != KindInfo {
			t.Errorf("%s: %+v", mode, e)
		}
		if mode == "wrongid" && !strings.Contains(e.Line, `"acquire_ok"`) {
			t.Errorf("%s: no offending line: %+v", mode, e)
		}
		c.Close()
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "g.sh"), []byte("while read -r l; do echo 'hello'; done\n"), 0o755)
	_, err := Dial(context.Background(), Program{Cmd: []string{"/bin/sh", "g.sh"}, Dir: dir}, testInit(), nil)
	if e := asError(t, err); e.Cause != "malformed" || e.Line != "hello" {
		t.Fatalf("garbage: %+v", e)
	}
}

// A program whose leases carry no token cannot run fenced; cas needs the
// program's own resource access.
func TestFits(t *testing.T) {
	c := &Client{tokens: false}
	if err := c.Fits("none"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"token", "term", "cas"} {
		if err := c.Fits(f); !errors.Is(err, targets.ErrBadConfig) {
			t.Errorf("%s: %v", f, err)
		}
	}
	c.tokens = true
	if err := c.Fits("token"); err != nil {
		t.Fatal(err)
	}
	if err := c.Fits("cas"); !errors.Is(err, targets.ErrBadConfig) {
		t.Fatal(err)
	}
	c.resource = true
	if err := c.Fits("cas"); err != nil {
		t.Fatal(err)
	}
}

func TestLoadManifest(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir, "", ""); !errors.Is(err, targets.ErrBadConfig) {
		t.Fatalf("no manifest: %v", err)
	}
	s, err := Load(dir, "python3 x.py", "")
	if err != nil || !s.Program.Shell || s.Program.Cmd[0] != "python3 x.py" {
		t.Fatalf("--client-cmd: %+v %v", s, err)
	}
	for _, bad := range []string{`{"protocol":1}`, `{"protocol":2,"command":["x"]}`, `{"protocol":1,"command":["x"],"packages":["a b"]}`, `{"protocol":1,"command":["x"],"colour":"red"}`, `not json`,
		`{"protocol":1,"command":["x"]}{"junk":true}`, `{"protocol":1,"command":["x"]} 7`} {
		os.WriteFile(filepath.Join(dir, ManifestFile), []byte(bad), 0o644)
		if _, err := Load(dir, "", ""); !errors.Is(err, targets.ErrBadConfig) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"protocol":1,"command":["./c"],"packages":["python3-redis"],"name":"n"}`), 0o644)
	os.WriteFile(filepath.Join(dir, "c"), []byte("x"), 0o755)
	s, err = Load(dir, "", "img:1")
	if err != nil || s.Manifest.Image != "img:1" || s.Name() != "n" || s.Program.Dir != Dir {
		t.Fatalf("%+v %v", s, err)
	}
	files, err := s.Files(1 << 20)
	if err != nil || len(files) != 2 || files["c"].Mode != 0o755 {
		t.Fatalf("files %v %v", files, err)
	}
	if _, err := s.Files(1); err == nil {
		t.Fatal("limit not enforced")
	}
}

// client.json names one target ("target") or several ("targets"), never
// both, never an empty list or a name twice.
func TestManifestTargets(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		manifest string
		want     []string // nil: refused, unless any
		any      bool
	}{
		{`{"protocol":1,"command":["x"]}`, nil, true},
		{`{"protocol":1,"command":["x"],"target":"redis"}`, []string{"redis"}, false},
		{`{"protocol":1,"command":["x"],"targets":["redis","zookeeper"]}`, []string{"redis", "zookeeper"}, false},
		{`{"protocol":1,"command":["x"],"target":"redis","targets":["zookeeper"]}`, nil, false},
		{`{"protocol":1,"command":["x"],"targets":[]}`, nil, false},
		{`{"protocol":1,"command":["x"],"targets":["redis","redis"]}`, nil, false},
		{`{"protocol":1,"command":["x"],"targets":[""]}`, nil, false},
		{`{"protocol":1,"command":["x"],"targets":"redis"}`, nil, false},
	} {
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(tc.manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Load(dir, "", "")
		switch {
		case tc.want == nil && !tc.any:
			if !errors.Is(err, targets.ErrBadConfig) {
				t.Errorf("%s: %v, want refused", tc.manifest, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.manifest, err)
		case !slices.Equal(p.Manifest.TargetNames(), tc.want):
			t.Errorf("%s: targets %q, want %q", tc.manifest, p.Manifest.TargetNames(), tc.want)
		}
	}
}

// The fake lock excludes nobody: conformance says so, and checks the rest.
func TestConformCatchesABrokenLock(t *testing.T) {
	init := testInit()
	init.Fencing = "none"
	var names []string
	steps := Conform(context.Background(), program(t, ""), init, ConformOptions{Timeout: 2 * time.Second},
		slog.New(slog.DiscardHandler), func(s Step) { names = append(names, s.Name) })
	failed := map[string]string{}
	for _, s := range steps {
		if !s.OK {
			failed[s.Name] = s.Detail
		}
	}
	if len(failed) != 1 || !strings.Contains(failed["exclusion"], "a second process got the lock") {
		t.Fatalf("failed checks %v (steps %v)", failed, names)
	}
	if len(names) != len(steps) || names[0] != "init" || names[len(names)-1] != "unknown request" {
		t.Fatalf("steps %v", names)
	}
}

// A program that talks too much on stdout is retired without leaving its
// reader behind; one that answers and exits has its answer taken; one whose
// descendant escaped its process group does not stall the retirement.
func TestProcessLifecycle(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 10; i++ {
		c, err := Dial(context.Background(), program(t, "chatty"), testInit(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Acquire(withDeadline(t, 5*time.Second)); asError(t, err).Cause != "malformed" {
			t.Fatalf("chatty: %v", err)
		}
		c.Close()
	}
	// The retired programs' goroutines end (a leak keeps them for good):
	// waited for, 10 s at most, not a fixed 200 ms a loaded machine may
	// not give them.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); after > before+3 && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	if after > before+3 {
		t.Errorf("goroutines: %d before 10 retirements, %d after", before, after)
	}

	for i := 0; i < 30; i++ {
		c, err := Dial(context.Background(), program(t, "replyexit"), testInit(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Acquire(withDeadline(t, 5*time.Second)); err != nil {
			t.Fatalf("run %d: the reply before the exit was lost: %v", i, err)
		}
		c.Close()
	}

	prog := program(t, "escape")
	c, err := Dial(context.Background(), prog, testInit(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(prog.Dir, "escaped.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	c.Close()
	// Close did not wait for the escaped child (which holds the program's
	// output open for 100 s): it is still alive when Close returns. By
	// looking, not by the clock.
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("the escaped child %d is gone when Close returns (%v): Close waited for it", pid, err)
	}
}

// A lease's requests go only to the process that took it: once it is
// retired they fail at once (nothing sent), and no new process is started
// for them. A read reply without a value is malformed, not an empty list.
func TestLeaseBoundRequests(t *testing.T) {
	c, err := Dial(context.Background(), program(t, "novalue", `"resource"`), testInit(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(withDeadline(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Access(nil).Read(context.Background(), resources.Access{Lease: l, Fencing: targets.FencingToken})
	if e := asError(t, err); e.Cause != "malformed" {
		t.Fatalf("read without value: %+v", e)
	}
	gen := c.Process().Gen()
	_, err = c.Access(nil).Write(context.Background(), resources.Access{Lease: l, Fencing: targets.FencingToken}, resources.State{}, []int64{1})
	if e := asError(t, err); e.Cause != "lost" || e.Kind != KindFail {
		t.Fatalf("write on a retired process's lease: %+v", e)
	}
	if l.Remaining() != 0 || l.Release(context.Background()) == nil || c.Process().Gen() != gen {
		t.Fatalf("a lost lease's requests started a process (gen %d, was %d)", c.Process().Gen(), gen)
	}
}

// A program's error text enters the error, and so the history, cut to
// MaxDetail bytes, whichever field holds it: 10 MB in an error reply's
// message or in its kind (a malformed reply).
func TestErrorTextIsCut(t *testing.T) {
	for _, mode := range []string{"bigerr", "bigkind"} {
		t.Run(mode, func(t *testing.T) {
			c, err := Dial(context.Background(), program(t, mode), testInit(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Acquire(withDeadline(t, 20*time.Second))
			if err == nil {
				t.Fatal("acquire: want an error")
			}
			if n := len(err.Error()); n > MaxDetail+512 {
				t.Fatalf("error of %d bytes, want at most %d: %.200s", n, MaxDetail+512, err.Error())
			}
			if !strings.Contains(err.Error(), "xxxx") || !strings.Contains(err.Error(), "bytes more") {
				t.Fatalf("error %.300q: want the text's start and how much was cut", err.Error())
			}
		})
	}
}

// remaining_ms of 2^63-1 fits no lease (as a duration it wraps to -1 ms):
// at acquire the reply is malformed (the process is retired), and a
// lease's Remaining is 0, never a negative or wrapped time.
func TestRemainingNoLeaseCanHave(t *testing.T) {
	c, err := Dial(context.Background(), program(t, "huge"), testInit(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Acquire(withDeadline(t, 5*time.Second))
	if err == nil {
		t.Fatalf("acquire_ok with remaining_ms 2^63-1 taken: remaining %s", l.(*lease).remaining)
	}
	if e := asError(t, err); e.Cause != "malformed" || !strings.Contains(e.Message, "remaining_ms") {
		t.Fatalf("error %+v", e)
	}

	c2, err := Dial(context.Background(), program(t, "hugeleft"), testInit(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	l, err = c2.Acquire(withDeadline(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if r := l.Remaining(); r != 0 {
		t.Fatalf("remaining of a lease whose program said 2^63-1 ms: %s, want 0", r)
	}
}

// client-check fails a program that says 2^63-1 ms are left, at acquire and
// at remaining: the time is compared with the TTL before it is converted.
func TestConformRefusesRemainingOverflow(t *testing.T) {
	init := testInit()
	init.Fencing = "none"
	for _, c := range []struct{ mode, step string }{{"excl-huge", "acquire"}, {"excl-hugeleft", "remaining"}} {
		t.Run(c.mode, func(t *testing.T) {
			steps := Conform(context.Background(), program(t, c.mode), init, ConformOptions{Timeout: 2 * time.Second}, slog.New(slog.DiscardHandler), nil)
			for _, s := range steps {
				if s.Name == c.step {
					if s.OK || !strings.Contains(s.Detail, "remaining_ms") {
						t.Fatalf("%s: %+v, want a failure about remaining_ms", c.step, s)
					}
					return
				}
			}
			t.Fatalf("no %s step in %+v", c.step, steps)
		})
	}
}

// A check that cannot run is left out, never failed: once the process that
// took the lock was retired (a malformed reply), its release would go to a
// fresh process that holds nothing ("no lock held"), which is the
// harness's doing, not the program's. So with a malformed remaining the
// checks that need the first process's lock (exclusion, release, and all
// after) are left out, and with a malformed write the second process's
// read and release are.
func TestConformLeavesOutWhatCannotRun(t *testing.T) {
	for _, c := range []struct {
		mode, failed string
		extra        []string
		absent       []string
	}{
		{"excl-badremaining", "remaining", nil, []string{"exclusion", "release", "handover"}},
		{"excl-badwrite", "write", []string{`"resource"`}, []string{"read", "release"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			init := testInit()
			init.Fencing = "none"
			steps := Conform(context.Background(), program(t, c.mode, c.extra...), init, ConformOptions{Timeout: 2 * time.Second}, slog.New(slog.DiscardHandler), nil)
			var failed, names []string
			for _, s := range steps {
				names = append(names, s.Name)
				if !s.OK {
					failed = append(failed, s.Name+": "+s.Detail)
				}
			}
			if len(failed) != 1 || !strings.HasPrefix(failed[0], c.failed+": ") {
				t.Errorf("failed checks %q, want only %s (steps %v)", failed, c.failed, names)
			}
			for _, a := range c.absent {
				if slices.Contains(names[slices.Index(names, c.failed)+1:], a) {
					t.Errorf("step %s ran after %s failed: steps %v", a, c.failed, names)
				}
			}
		})
	}
}

// The program's name for itself, which test.json, the report and the zoo
// show, is cut to MaxName bytes.
func TestProgramNameIsCut(t *testing.T) {
	c, err := Dial(context.Background(), program(t, "bigname"), testInit(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := len(c.Name()); n > MaxName+32 || !strings.HasPrefix(c.Name(), "xxxx") {
		t.Fatalf("name of %d bytes (%.40q), want at most %d", n, c.Name(), MaxName+32)
	}
}

// A program that implements held answers its library's belief through the
// lease (targets.Believer); one that does not cannot be asked. "held" left
// out of held_ok is malformed (the process is retired); a question whose
// asker gave up before it could be sent is not sent and retires nothing;
// a lease whose process was retired is not held, without asking.
func TestHeldThroughTheProtocol(t *testing.T) {
	acquire := func(t *testing.T, mode string, extra ...string) (*Client, targets.Lease) {
		t.Helper()
		c, err := Dial(context.Background(), program(t, mode, extra...), testInit(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		l, err := c.Acquire(withDeadline(t, 5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return c, l
	}
	if c, l := acquire(t, ""); c.Believes() {
		t.Error("believes without implementing held")
	} else if _, ok := l.(targets.Believer); ok {
		t.Error("the lease of a program that does not implement held can be asked")
	}
	for _, tc := range []struct {
		mode string
		held bool
		err  string
	}{
		{"", true, ""},
		{"heldfalse", false, ""},
		{"heldnone", false, `held_ok has no "held"`},
	} {
		c, l := acquire(t, tc.mode, `"held"`)
		b, ok := l.(targets.Believer)
		if !ok || !c.Believes() {
			t.Fatalf("%s: the lease cannot be asked", tc.mode)
		}
		held, err := b.Held(withDeadline(t, 5*time.Second))
		if held != tc.held || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: held %v, err %v; want %v, %q", tc.mode, held, err, tc.held, tc.err)
		}
		if tc.err != "" {
			if held, err := b.Held(context.Background()); held || err != nil {
				t.Errorf("%s: after a malformed answer the process is retired, its lease not held: got %v, %v", tc.mode, held, err)
			}
		}
	}
	c, l := acquire(t, "", `"held"`)
	gen := c.Process().Gen()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.(targets.Believer).Held(gone); !errors.Is(err, context.Canceled) {
		t.Errorf("a question given up before it was sent: %v, want context.Canceled", err)
	}
	if c.Process().Gen() != gen || l.Remaining() != 800*time.Millisecond {
		t.Error("a question given up before it was sent retired the process")
	}
}

// client-check asks held of a program that implements it: true of the lock
// just granted passes, false fails the step.
func TestConformAsksHeld(t *testing.T) {
	for _, tc := range []struct {
		mode string
		ok   bool
	}{{"", true}, {"heldfalse", false}} {
		steps := Conform(withDeadline(t, time.Minute), program(t, "excl-"+tc.mode, `"held"`), testInit(), ConformOptions{Timeout: 5 * time.Second}, slog.New(slog.DiscardHandler), nil)
		var held *Step
		for i := range steps {
			if steps[i].Name == "held" {
				held = &steps[i]
			}
		}
		if held == nil || held.OK != tc.ok {
			t.Errorf("mode %q: held step %+v, want ok %v (steps %+v)", tc.mode, held, tc.ok, steps)
		}
	}
	steps := Conform(withDeadline(t, time.Minute), program(t, "excl-"), testInit(), ConformOptions{Timeout: 5 * time.Second}, slog.New(slog.DiscardHandler), nil)
	for _, s := range steps {
		if s.Name == "held" {
			t.Error("held asked of a program that does not implement it")
		}
	}
}
