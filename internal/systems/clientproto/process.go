package clientproto

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Program is how to start a client program: its command line and working
// directory (in the worker's container).
type Program struct {
	// Cmd is the argv; Shell runs Cmd[0] with /bin/sh -c instead.
	Cmd   []string `json:"cmd"`
	Shell bool     `json:"shell,omitempty"`
	Dir   string   `json:"dir"`
	Env   []string `json:"env,omitempty"`
}

func (p Program) String() string {
	if p.Shell && len(p.Cmd) > 0 {
		return p.Cmd[0]
	}
	return strings.Join(p.Cmd, " ")
}

// Grace is how long past a request's deadline a reply is still waited for:
// a worker that was paused (SIGSTOP) with its program wakes with its timers
// expired, and the reply that the program sends once it runs again should
// not be taken for a timeout.
const Grace = 2 * time.Second

// InitTimeout bounds the reply to init (the program's start included).
const InitTimeout = 20 * time.Second

// Process runs one client program at a time and exchanges requests with it.
// It is safe for concurrent use; requests are serialized.
type Process struct {
	prog Program
	init Init
	log  *slog.Logger

	mu     sync.Mutex
	run    *running // nil: not started, or retired
	nextID int64
	// Gen counts the processes started; a lease belongs to one.
	gen     int
	initOK  Reply
	retired int
	// InitTimeout bounds the reply to init (default InitTimeout).
	InitTimeout time.Duration
}

// running is one started process.
type running struct {
	cmd *exec.Cmd
	// stdin, stdout and stderr are our ends of os.Pipes: Wait neither
	// closes them nor waits for them (a grandchild that escaped the
	// process group cannot hold Wait), and stdin takes a write deadline.
	stdin, stdout, stderrR *os.File
	lines                  chan []byte   // stdout's lines; closed at EOF
	quit                   chan struct{} // closed by retire: the reader stops sending
	exited                 chan struct{} // closed once Wait returned
	stderrDone             chan struct{} // closed once stderr was read to its end
	state                  string        // the exit status: read only after exited
	stderr                 *tailBuffer
}

// NewProcess returns a Process for prog; nothing starts before the first
// request (or Start).
func NewProcess(prog Program, init Init, log *slog.Logger) *Process {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	init.Protocol = Version
	return &Process{prog: prog, init: init, log: log}
}

// Start starts the program and sends init, unless a process runs already.
// It returns init's reply.
func (p *Process) Start(ctx context.Context) (Reply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.ensure(ctx); err != nil {
		return Reply{}, err
	}
	return p.initOK, nil
}

// Gen is the number of processes started so far (the current one's).
func (p *Process) Gen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen
}

// Retired is the number of processes retired so far.
func (p *Process) Retired() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retired
}

// Call sends req and waits for its reply, at most timeout (plus Grace, and
// as long as ctx lets it; ctx's own deadline is not a cancellation, the
// timeout is). An error reply is an *Error with Cause "reply"; a program
// that answers garbage, misses the deadline or exits is retired and the
// error is an *Error of kind Info. A request that could not be sent because
// no process could be started is of kind Fail.
func (p *Process) Call(ctx context.Context, req Request, timeout time.Duration) (Reply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.ensure(ctx); err != nil {
		return Reply{}, err
	}
	return p.call(ctx, req, timeout)
}

// CallHeld is Call for a request that belongs to the lease taken by process
// gen: when that process is gone it fails at once (kind Fail, cause
// "lost", nothing sent) instead of starting a new one, which never held
// the lock.
func (p *Process) CallHeld(ctx context.Context, gen int, req Request, timeout time.Duration) (Reply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.callHeld(ctx, gen, req, timeout)
}

// callHeldIfLive is CallHeld for a question whose asker may give up: once
// the request in flight is answered, it is sent only if ctx has not ended,
// and then awaited for timeout regardless of ctx (a caller giving up does
// not retire the process).
func (p *Process) callHeldIfLive(ctx context.Context, gen int, req Request, timeout time.Duration) (Reply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return Reply{}, err
	}
	return p.callHeld(context.WithoutCancel(ctx), gen, req, timeout)
}

// callHeld is CallHeld, called with mu.
func (p *Process) callHeld(ctx context.Context, gen int, req Request, timeout time.Duration) (Reply, error) {
	if !p.isRunning(gen) {
		return Reply{}, &Error{Request: req.Type, Kind: KindFail, Cause: "lost", Message: "the process that took the lease was retired"}
	}
	return p.call(ctx, req, timeout)
}

// runs reports whether process gen is the one running.
func (p *Process) runs(gen int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.isRunning(gen)
}

// isRunning is runs, called with mu.
func (p *Process) isRunning(gen int) bool { return p.run != nil && p.gen == gen }

// callGen is Call that also returns the generation of the process that
// answered.
func (p *Process) callGen(ctx context.Context, req Request, timeout time.Duration) (Reply, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.ensure(ctx); err != nil {
		return Reply{}, p.gen, err
	}
	r, err := p.call(ctx, req, timeout)
	return r, p.gen, err
}

// malformed retires the process over a reply that breaks the protocol in
// its content (found by the caller) and returns the error.
func (p *Process) malformed(req, msg string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.retire("malformed")
	return &Error{Request: req, Kind: KindInfo, Cause: "malformed", Message: msg}
}

// ensure starts a process and sends init unless one runs. Called with mu.
func (p *Process) ensure(ctx context.Context) error {
	if p.run != nil {
		return nil
	}
	if err := p.start(); err != nil {
		return &Error{Request: TypeInit, Kind: KindFail, Cause: "start", Message: err.Error()}
	}
	limit := p.InitTimeout
	if limit <= 0 {
		limit = InitTimeout
	}
	r, err := p.call(ctx, Request{Type: TypeInit, Init: &p.init, Fencing: p.init.Fencing}, limit)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Kind = KindFail // nothing of the operation was sent
		}
		p.retire("init failed")
		return err
	}
	if err := checkInit(r); err != nil {
		p.retire("bad init reply")
		return &Error{Request: TypeInit, Kind: KindFail, Cause: "malformed", Message: clipDetail(err.Error())}
	}
	p.initOK = r
	return nil
}

// checkInit checks init's reply: it must implement the lock.
func checkInit(r Reply) error {
	if r.Type != TypeInit+"_ok" {
		if r.Type == TypeError {
			return fmt.Errorf("init refused: %s", r.Message)
		}
		return fmt.Errorf("reply type %q to init (want init_ok)", r.Type)
	}
	lock := false
	for _, s := range r.Implements {
		switch s {
		case ImplLock:
			lock = true
		case ImplResource, ImplHeld:
		default:
			return fmt.Errorf("implements %q (valid: lock, resource, held)", s)
		}
	}
	if !lock {
		return errors.New(`init_ok: "implements" must list "lock"`)
	}
	if r.Tokens == nil {
		return errors.New(`init_ok: "tokens" (true or false) is missing`)
	}
	return nil
}

func (p *Process) start() error {
	if len(p.prog.Cmd) == 0 {
		return errors.New("no command")
	}
	var cmd *exec.Cmd
	if p.prog.Shell {
		cmd = exec.Command("/bin/sh", "-c", p.prog.Cmd[0])
	} else {
		cmd = exec.Command(p.prog.Cmd[0], p.prog.Cmd[1:]...)
	}
	cmd.Dir = p.prog.Dir
	cmd.Env = append(os.Environ(), p.prog.Env...)
	// Its own process group: retiring kills whatever it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var ours []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			ours = append(ours, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll(ours)
		return err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll(ours)
		return err
	}
	// The child has its ends; ours are stdin's write end and the read ends.
	inR.Close()
	outW.Close()
	errW.Close()
	r := &running{cmd: cmd, stdin: inW, stdout: outR, stderrR: errR, lines: make(chan []byte, 16),
		quit: make(chan struct{}), exited: make(chan struct{}), stderrDone: make(chan struct{}), stderr: &tailBuffer{max: 4096}}
	p.gen++
	p.log.Info("client program started", "cmd", p.prog.String(), "pid", cmd.Process.Pid, "gen", p.gen)
	go func() {
		defer close(r.lines)
		send := func(b []byte) bool {
			select {
			case r.lines <- b:
				return true
			case <-r.quit:
				return false
			}
		}
		sc := bufio.NewScanner(r.stdout)
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		for sc.Scan() {
			if !send(append([]byte(nil), sc.Bytes()...)) {
				return
			}
		}
		if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
			send([]byte(fmt.Sprintf("\x00read error: %v", err)))
		}
	}()
	go func() {
		defer close(r.stderrDone)
		w := &logWriter{log: p.log, tail: r.stderr}
		_, _ = io.Copy(w, r.stderrR)
	}()
	go func() {
		err := cmd.Wait()
		if err != nil {
			r.state = err.Error()
		} else {
			r.state = "exit status 0"
		}
		close(r.exited)
	}()
	p.run = r
	return nil
}

// call sends one request and reads lines until its reply. Called with mu
// and a running process.
func (p *Process) call(ctx context.Context, req Request, timeout time.Duration) (Reply, error) {
	r := p.run
	p.nextID++
	req.ID = p.nextID
	fail := func(kind, cause, msg, line string) (Reply, error) {
		p.retire(cause)
		return Reply{}, &Error{Request: req.Type, Kind: kind, Cause: cause, Message: clipDetail(msg), Line: line}
	}
	b, err := json.Marshal(req)
	if err != nil {
		return Reply{}, err
	}
	_ = r.stdin.SetWriteDeadline(time.Now().Add(timeout))
	if n, err := r.stdin.Write(append(b, '\n')); err != nil {
		kind := KindInfo // part of it may have been read
		if n == 0 {
			kind = KindFail // nothing was written: the program cannot have seen it
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fail(kind, "timeout", fmt.Sprintf("the program did not read its stdin within %s", timeout), "")
		}
		return fail(kind, "exited", p.exitMessage(r, err), "")
	}
	limit := timeout
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	done := ctx.Done()
	for {
		select {
		case line, ok := <-r.lines:
			if !ok {
				return fail(KindInfo, "exited", p.exitMessage(r, nil), "")
			}
			if bytes.HasPrefix(line, []byte("\x00")) {
				return fail(KindInfo, "malformed", string(line[1:]), "")
			}
			rep, err := parseReply(line)
			if err != nil {
				return fail(KindInfo, "malformed", err.Error(), truncate(string(line), 300))
			}
			if rep.ID != req.ID {
				// A late reply to a request given up on cannot happen (the
				// process would have been retired); anything else is the
				// program's mistake.
				return fail(KindInfo, "malformed", fmt.Sprintf("reply to id %d while waiting for id %d", rep.ID, req.ID), truncate(string(line), 300))
			}
			if rep.Type == TypeError {
				return rep, &Error{Request: req.Type, Kind: rep.Kind, Cause: "reply", Message: clipDetail(rep.Message)}
			}
			if rep.Type != req.Type+"_ok" {
				return fail(KindInfo, "malformed", fmt.Sprintf("reply type %q to %s (want %s_ok or error)", rep.Type, req.Type, req.Type), truncate(string(line), 300))
			}
			return rep, nil
		case <-deadline.C:
			// Woken late (a pause)? A reply that is on its way is still
			// taken.
			deadline.Reset(Grace)
			if timeout > 0 {
				timeout = -1
				continue
			}
			return fail(KindInfo, "timeout", fmt.Sprintf("no reply within %s (and %s of grace)", limit, Grace), "")
		case <-done:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				done = nil // the timeout decides
				continue
			}
			return fail(KindInfo, "cancelled", ctx.Err().Error(), "")
		}
	}
}

// exitMessage says how the program ended, with the tail of its stderr.
func (p *Process) exitMessage(r *running, werr error) string {
	select {
	case <-r.exited:
	case <-time.After(2 * time.Second):
	}
	msg := "the program closed its stdout"
	select {
	case <-r.exited:
		msg = "the program exited: " + r.state
		// What it wrote to stderr last is read on another goroutine:
		// wait for its end (bounded: a child it left may hold it open).
		select {
		case <-r.stderrDone:
		case <-time.After(time.Second):
		}
	default:
	}
	if werr != nil {
		msg += " (write: " + werr.Error() + ")"
	}
	if t := r.stderr.String(); t != "" {
		msg += "; stderr: " + lastLines(t, 3)
	}
	return msg
}

// retire kills the running process and its group. Called with mu.
func (p *Process) retire(why string) {
	r := p.run
	if r == nil {
		return
	}
	p.run = nil
	p.retired++
	close(r.quit)
	_ = r.stdin.Close()
	if r.cmd.Process != nil {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	}
	state := "still running after SIGKILL"
	select {
	case <-r.exited:
		state = r.state
	case <-time.After(5 * time.Second):
	}
	// Unblock the readers even if an escaped descendant holds the pipes.
	_ = r.stdout.Close()
	_ = r.stderrR.Close()
	p.log.Warn("client program retired", "why", why, "gen", p.gen, "state", state)
}

// Close retires the process, if one runs.
func (p *Process) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run != nil {
		p.retire("closed")
	}
	return nil
}

// logWriter copies the program's stderr to the worker's log, a line at a
// time, and keeps its tail.
type logWriter struct {
	log  *slog.Logger
	tail *tailBuffer
	buf  []byte
	mu   sync.Mutex
}

func (w *logWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tail.Write(b)
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.log.Info("client program", "stderr", string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 4096 {
		w.log.Info("client program", "stderr", string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(b), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
