// Command rueidislock-stale-ctx reproduces a stale lock context in
// github.com/redis/rueidis/rueidislock: after the holder's connection is
// silently cut, a second client is granted the lock while the holder's lock
// context is still not cancelled.
//
// rueidislock's README (rueidislock/README.md in the module) promises: "The
// returned ctx will be canceled automatically and immediately once the
// KeyMajority is not held anymore". This program measures, for each trial,
//
//	window = (time A's lock ctx was cancelled) - (time B was granted the lock)
//
// and exits 1 if any window is > 0, 0 otherwise, 2 on a setup error.
//
// It starts nothing but an in-process TCP proxy on 127.0.0.1. Client A (the
// holder) reaches Redis through the proxy; client B connects directly. After
// A holds the lock, the proxy "blackholes" A: it keeps A's TCP connections
// open but silently discards every byte in both directions (and does the same
// for any connection A opens later), like a network that drops packets.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// proxy forwards 127.0.0.1:<port> to Redis. When blackholed it reads and
// discards bytes in both directions without closing any connection.
type proxy struct {
	ln       net.Listener
	target   string
	black    atomic.Bool
	mu       sync.Mutex
	conns    []net.Conn
	firstExt atomic.Pointer[time.Time] // first discarded A->Redis chunk with an EVALSHA/EVAL (an extension)
	cutConns atomic.Int32              // connections A opened while blackholed
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.black.Load() {
			p.cutConns.Add(1)
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pipe(s, c, true)  // A -> Redis
		go p.pipe(c, s, false) // Redis -> A
	}
}

func (p *proxy) pipe(dst, src net.Conn, request bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if p.black.Load() {
				if request && isScript(buf[:n]) {
					now := time.Now()
					p.firstExt.CompareAndSwap(nil, &now)
				}
			} else if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !p.black.Load() {
				dst.Close()
			}
			return
		}
	}
}

// isScript says whether a chunk sent by A carries an EVALSHA or EVAL: after
// the grant, the only scripts A sends are rueidislock's extensions.
func isScript(b []byte) bool {
	for _, line := range strings.Split(string(b), "\r\n") {
		if u := strings.ToUpper(line); u == "EVALSHA" || u == "EVAL" {
			return true
		}
	}
	return false
}

func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

type result struct {
	window      time.Duration // cancel(A) - grant(B)
	errAtGrant  error         // A's ctx.Err() right after B's grant
	cutToGrant  time.Duration // blackhole -> grant(B)
	cutToCancel time.Duration // blackhole -> cancel(A)
	pttlAtCut   time.Duration // key's PTTL read by B at the blackhole
	lastRefused time.Duration // blackhole -> end of B's last refused attempt
	extSeen     bool          // an extension of A's was discarded
	extToCancel time.Duration // first discarded extension -> cancel(A)
	newConns    int32         // connections A opened after the cut
}

func newLocker(addr string, validity time.Duration) (rueidislock.Locker, error) {
	return rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,
		KeyValidity:    validity,
		NoLoopTracking: true,
	})
}

func trial(redisAddr, name string, validity, poll time.Duration, rng *rand.Rand) (result, error) {
	var r result
	px, err := newProxy(redisAddr)
	if err != nil {
		return r, err
	}
	defer px.close()

	a, err := newLocker(px.addr(), validity)
	if err != nil {
		return r, fmt.Errorf("locker A: %w", err)
	}
	defer a.Close() // runs after px.close(): A's connections are dead by then
	b, err := newLocker(redisAddr, validity)
	if err != nil {
		return r, fmt.Errorf("locker B: %w", err)
	}
	defer b.Close()

	ctxA, cancelA, err := a.WithContext(context.Background(), name)
	if err != nil {
		return r, fmt.Errorf("A acquires: %w", err)
	}
	cancelledA := make(chan time.Time, 1)
	go func() { <-ctxA.Done(); cancelledA <- time.Now() }()

	// Let A extend at least once, then cut it at a random phase of its
	// extension interval (the default ExtendInterval is KeyValidity/2).
	interval := validity / 2
	time.Sleep(interval + time.Duration(rng.Int63n(int64(interval))))
	if ctxA.Err() != nil {
		return r, fmt.Errorf("A lost the lock before the cut: %v", ctxA.Err())
	}
	key := "rueidislock:0:" + name
	px.black.Store(true)
	cut := time.Now()
	if pttl, err := b.Client().Do(context.Background(), b.Client().B().Pttl().Key(key).Build()).AsInt64(); err == nil {
		r.pttlAtCut = time.Duration(pttl) * time.Millisecond
	}

	// B tries to acquire the same lock in a loop.
	deadline := cut.Add(3*validity + 20*time.Second)
	var grantB time.Time
	var cancelB context.CancelFunc
	for {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		_, c, err := b.TryWithContext(ctx, name)
		now := time.Now()
		if err == nil {
			grantB, cancelB = now, func() { c(); cancel() }
			r.errAtGrant = ctxA.Err()
			break
		}
		cancel()
		if errors.Is(err, rueidislock.ErrNotLocked) {
			r.lastRefused = now.Sub(cut)
		}
		if now.After(deadline) {
			return r, fmt.Errorf("B never got the lock in %v: %w", deadline.Sub(cut), err)
		}
		time.Sleep(poll)
	}
	defer cancelB()

	var cancelAt time.Time
	select {
	case cancelAt = <-cancelledA:
	case <-time.After(time.Until(deadline)):
		return r, fmt.Errorf("A's ctx was never cancelled (%v after the cut; B was granted %v after the cut)",
			time.Since(cut).Round(time.Millisecond), grantB.Sub(cut).Round(time.Millisecond))
	}
	r.window = cancelAt.Sub(grantB)
	r.cutToGrant = grantB.Sub(cut)
	r.cutToCancel = cancelAt.Sub(cut)
	r.newConns = px.cutConns.Load()
	if t := px.firstExt.Load(); t != nil {
		r.extSeen = true
		r.extToCancel = cancelAt.Sub(*t)
	}
	// cancelA waits for A's monitoring goroutine, which may wait on the cut
	// connection: close the proxy first so that it fails fast.
	px.close()
	done := make(chan struct{})
	go func() { cancelA(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		fmt.Fprintln(os.Stderr, "warning: A's cancel did not return in 15s")
	}
	return r, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func main() {
	redisAddr := flag.String("redis", "127.0.0.1:6379", "redis-server address (host:port)")
	n := flag.Int("n", 5, "number of trials")
	validity := flag.Duration("validity", 2*time.Second, "rueidislock KeyValidity (ExtendInterval is the default, KeyValidity/2)")
	poll := flag.Duration("poll", 5*time.Millisecond, "pause between B's TryWithContext attempts")
	seed := flag.Int64("seed", time.Now().UnixNano(), "seed of the random cut phase")
	flag.Parse()

	// Is Redis there?
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{*redisAddr}, DisableCache: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "cannot reach redis at %s: %v\n", *redisAddr, err)
		os.Exit(2)
	}
	info, _ := c.Do(context.Background(), c.B().Info().Section("server").Build()).ToString()
	c.Close()
	version := "?"
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "redis_version:"); ok {
			version = v
		}
	}
	fmt.Printf("redis %s at %s, rueidislock KeyMajority=1 KeyValidity=%v ExtendInterval=%v, n=%d, seed=%d\n",
		version, *redisAddr, *validity, *validity/2, *n, *seed)

	rng := rand.New(rand.NewSource(*seed))
	var windows []time.Duration
	stale := 0
	for i := 1; i <= *n; i++ {
		name := fmt.Sprintf("stale-ctx-%d-%d-%d", os.Getpid(), time.Now().UnixNano(), i)
		r, err := trial(*redisAddr, name, *validity, *poll, rng)
		if err != nil {
			fmt.Fprintf(os.Stderr, "trial %d: %v\n", i, err)
			os.Exit(2)
		}
		windows = append(windows, r.window)
		if r.window > 0 {
			stale++
		}
		errs := "nil"
		if r.errAtGrant != nil {
			errs = r.errAtGrant.Error()
		}
		ext := "no extension of A's was dropped"
		if r.extSeen {
			ext = fmt.Sprintf("A cancelled %s after its first dropped extension (EVALSHA) was sent", ms(r.extToCancel))
		}
		fmt.Printf("trial %d: window %s (cancel(A) - grant(B)); A's ctx.Err() at B's grant: %s; after the cut: key PTTL %s, B last refused +%s, B granted +%s, A cancelled +%s; %s; A opened %d new connection(s) after the cut\n",
			i, ms(r.window), errs, ms(r.pttlAtCut), ms(r.lastRefused), ms(r.cutToGrant), ms(r.cutToCancel), ext, r.newConns)
	}
	sorted := slices.Clone(windows)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	parts := make([]string, len(windows))
	for i, w := range windows {
		parts[i] = ms(w)
	}
	fmt.Printf("windows: %s\nmedian %s, max %s; %d of %d trials: B was granted while A's ctx was not yet cancelled\n",
		strings.Join(parts, " "), ms(med), ms(sorted[len(sorted)-1]), stale, len(windows))
	if stale > 0 {
		fmt.Println("FAIL: the README promises the ctx is canceled immediately once the KeyMajority is not held anymore")
		os.Exit(1)
	}
	fmt.Println("OK: A's ctx was always cancelled no later than B's grant")
}
