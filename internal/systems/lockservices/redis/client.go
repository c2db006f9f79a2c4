package redis

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fencecheck/fencecheck/targets"
)

// Keys are the keys of one run, all under the run's prefix.
type Keys struct {
	Lock    string // the lock: a random value per grant, with a PX expiry
	Counter string // INCR'd once per grant: the fencing token
	Value   string // the protected list, as JSON
	Fence   string // the highest token a token-fenced write was accepted with
	Rev     string // INCR'd by every write: the resource's revision of it
}

// KeysFor returns the keys under prefix.
func KeysFor(prefix string) Keys {
	return Keys{Lock: prefix + "/lock", Counter: prefix + "/token", Value: prefix + "/value",
		Fence: prefix + "/fence", Rev: prefix + "/rev"}
}

// Options are the go-redis options of every fencecheck client of one Redis
// server. Each call is one attempt: go-redis retries a failed command up to
// 3 times by default (MaxRetries), which could apply a write twice or apply
// a write whose first attempt was reported lost; -1 turns that off. Dialing
// may be retried (nothing was sent yet). RESP2, and no CLIENT SETINFO
// (Redis 7.0 does not know it), keep the handshake to nothing. Deadlines
// come from the caller's context (ContextTimeoutEnabled), else rpc.
func Options(addr string, rpc time.Duration) *goredis.Options {
	return &goredis.Options{
		Addr:                  addr,
		Protocol:              2,
		DisableIdentity:       true,
		MaxRetries:            -1,
		DialTimeout:           min(rpc, 2*time.Second),
		DialerRetries:         1,
		ReadTimeout:           rpc,
		WriteTimeout:          rpc,
		ContextTimeoutEnabled: true,
		PoolSize:              8,
	}
}

// NotSentHook marks the errors of connections that could not be made, so
// that NotSent can tell a command that certainly never reached the server
// from one whose outcome is unknown. Add it to every client (AddHook).
type NotSentHook struct{}

// DialHook wraps dial errors (with Sentinel, also the failure to find the
// primary) in an error NotSent recognizes.
func (NotSentHook) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, &notSentError{err}
		}
		return c, nil
	}
}

// ProcessHook passes commands through.
func (NotSentHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

// ProcessPipelineHook passes pipelines through.
func (NotSentHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

type notSentError struct{ err error }

func (e *notSentError) Error() string { return "not sent: " + e.err.Error() }
func (e *notSentError) Unwrap() error { return e.err }

// NotSent reports whether err means that the command never left the client
// (no connection could be made or had), so it certainly did not happen.
func NotSent(err error) bool {
	var ns *notSentError
	return errors.As(err, &ns) || errors.Is(err, goredis.ErrPoolTimeout) ||
		errors.Is(err, goredis.ErrPoolExhausted) || errors.Is(err, goredis.ErrClosed)
}

// Refused reports whether err is the server's error reply (LOADING while it
// loads its data, READONLY from a primary demoted to replica, ...): the
// server refused the command, so it did not happen.
func Refused(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && !errors.Is(err, goredis.Nil)
}

// Quiet silences go-redis's own log (a line on stderr for every failed
// dial: a server that is down is what a test expects). The logger is
// go-redis's, global to the process; the Redis targets call Quiet before
// they make a client.
func Quiet() { quietOnce.Do(func() { goredis.SetLogger(quietLogger{}) }) }

var quietOnce sync.Once

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// NewClient returns a go-redis client of one server with Options and the
// NotSentHook.
func NewClient(addr string, rpc time.Duration) *goredis.Client {
	c, _ := NewClientFor(addr, rpc, nil) // no credentials: no error
	return c
}

// NewClientFor is NewClient for an address of an attached server
// (Target.Attach: HOST:PORT, redis:// or rediss://, which is TLS),
// presenting creds (nil: none): its TLS configuration, its user name
// and password (AUTH).
func NewClientFor(addr string, rpc time.Duration, creds *targets.Credentials) (*goredis.Client, error) {
	Quiet()
	tlsOn := false
	if rest, ok := strings.CutPrefix(addr, "rediss://"); ok {
		addr, tlsOn = rest, true
	} else {
		addr = strings.TrimPrefix(addr, "redis://")
	}
	o := Options(addr, rpc)
	if creds != nil {
		tc, err := creds.TLSConfig()
		if err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
		o.TLSConfig, o.Username, o.Password = tc, creds.Username, creds.Password
	}
	if tlsOn && o.TLSConfig == nil {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	c := goredis.NewClient(o)
	c.AddHook(NotSentHook{})
	return c, nil
}

// RandomValue is a lock value: 16 random bytes, base64, unique per grant.
func RandomValue() string {
	b := make([]byte, 16)
	_, _ = crand.Read(b) // never fails (crypto/rand)
	return base64.RawStdEncoding.EncodeToString(b)
}

// Scripts. Each runs atomically on one Redis server.
var (
	// acquireScript takes the lock and issues its token in one step:
	// SET lock value NX PX ttl, and only if that set it, INCR the counter.
	// No other grant can come between the two, so tokens are in grant
	// order. It returns the token, or 0 when the lock is held.
	acquireScript = goredis.NewScript(`
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0`)

	// releaseScript deletes the lock key only if it still holds our value:
	// an expired holder must not delete the next holder's lock.
	releaseScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

	// writeScript is the unfenced write: SET value; INCR rev.
	writeScript = goredis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1])
return {1, redis.call('INCR', KEYS[2])}`)

	// tokenScript keeps the highest token it accepted in the fence key and
	// refuses a write with a lower one (an equal one is the same holder
	// writing again). It returns {1, rev} when it wrote, {0, highest} when
	// it refused.
	tokenScript = goredis.NewScript(`
local highest = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[2]) < highest then
  return {0, highest}
end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[1], ARGV[1])
return {1, redis.call('INCR', KEYS[3])}`)

	// casScript writes only while the lock key still holds the writer's
	// random value: once its lease expired (and maybe another client took
	// the lock), the write is refused. It returns {1, rev} or {0, 0}.
	casScript = goredis.NewScript(`
if redis.call('GET', KEYS[2]) ~= ARGV[2] then
  return {0, 0}
end
redis.call('SET', KEYS[1], ARGV[1])
return {1, redis.call('INCR', KEYS[3])}`)

	// readTokenScript is the token-fenced read: it refuses a reader whose
	// token is lower than the highest accepted, else raises the highest to
	// the reader's and returns the list. It returns {1, list} or {0,
	// highest}.
	readTokenScript = goredis.NewScript(`
local highest = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[1]) < highest then
  return {0, tostring(highest)}
end
redis.call('SET', KEYS[2], ARGV[1])
return {1, redis.call('GET', KEYS[1]) or ''}`)

	// resetScript empties the list and forgets the fence and the lock.
	resetScript = goredis.NewScript(`
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[2], '[]')
redis.call('SET', KEYS[3], '0')
return 1`)
)

// pollInterval is how often a waiting client tries the lock again.
func pollInterval() time.Duration {
	return 15*time.Millisecond + rand.N(10*time.Millisecond)
}

// Owner is what the resource needs of a lease to fence a write: its token
// (token fencing) and the random value its lock key holds while the lease
// lasts (cas fencing).
type Owner interface {
	Token() int64
	LockValue() string
}

// Lock is the single-instance lock recipe on one Redis server (or on the
// primary a Sentinel-aware client follows).
type Lock struct {
	RDB  *goredis.Client
	Keys Keys
	TTL  time.Duration
	RPC  time.Duration
}

func (l *Lock) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.RPC)
}

// Acquire runs acquireScript until it grants the lock or ctx ends. An
// attempt that found the lock held, one the server refused (Refused), and
// one that certainly never reached the server (NotSent: the server is down
// or unreachable) are tried again after a short wait; each is a new
// attempt, none can have taken the lock. An attempt whose outcome is
// unknown (a timeout, a lost connection) ends Acquire with an error, after a
// best-effort release of our value in case that attempt did take the lock.
func (l *Lock) Acquire(ctx context.Context) (targets.Lease, error) {
	value := RandomValue()
	ttl := strconv.FormatInt(l.TTL.Milliseconds(), 10)
	for {
		sent := time.Now()
		rctx, cancel := l.timeout(ctx)
		tok, err := acquireScript.Eval(rctx, l.RDB, []string{l.Keys.Lock, l.Keys.Counter}, value, ttl).Int64()
		cancel()
		switch {
		case err == nil && tok > 0:
			return &Lease{lock: l, value: value, token: tok, expiry: sent.Add(l.TTL)}, nil
		case err != nil && !NotSent(err) && !Refused(err):
			l.release(context.WithoutCancel(ctx), value)
			return nil, fmt.Errorf("redis: lock: %w", err)
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return nil, fmt.Errorf("redis: lock: %w (last attempt: %w)", ctx.Err(), err)
			}
			return nil, fmt.Errorf("redis: lock: %w", ctx.Err())
		case <-time.After(pollInterval()):
		}
	}
}

// release deletes the lock key if it holds value; it reports whether it did.
func (l *Lock) release(ctx context.Context, value string) (bool, error) {
	rctx, cancel := l.timeout(ctx)
	defer cancel()
	n, err := releaseScript.Eval(rctx, l.RDB, []string{l.Keys.Lock}, value).Int64()
	return n == 1, err
}

// Lease is a grant of Lock.
type Lease struct {
	lock   *Lock
	value  string
	token  int64
	expiry time.Time
}

// Token is the counter's value at the grant.
func (l *Lease) Token() int64 { return l.token }

// LockValue is the random value of the grant.
func (l *Lease) LockValue() string { return l.value }

// Remaining is TTL minus the time since the client sent the SET: the key
// cannot have been set earlier than that, so it expires no earlier (by the
// server's clock running at the client's pace).
func (l *Lease) Remaining() time.Duration { return time.Until(l.expiry) }

// Held is the recipe's own belief: its local deadline (Remaining) has
// not passed (targets.Believer).
func (l *Lease) Held(context.Context) (bool, error) { return l.Remaining() > 0, nil }

// Release deletes the lock key if it still holds our value. A lease that
// expired meanwhile is not an error: the key went by itself.
func (l *Lease) Release(ctx context.Context) error {
	if _, err := l.lock.release(ctx, l.value); err != nil {
		return fmt.Errorf("redis: release: %w", err)
	}
	return nil
}

// Resource is the protected list: a key in one Redis server, with its
// fence and revision keys beside it.
type Resource struct {
	RDB  *goredis.Client
	Keys Keys
	RPC  time.Duration
}

func (r *Resource) timeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.RPC)
}

// Reset makes the list empty, sets the fence to 0 and deletes the lock key
// (on this server). The token counter is left alone: it only grows.
func (r *Resource) Reset(ctx context.Context) error {
	rctx, cancel := r.timeout(ctx)
	defer cancel()
	if err := resetScript.Eval(rctx, r.RDB, []string{r.Keys.Lock, r.Keys.Value, r.Keys.Fence}).Err(); err != nil {
		return fmt.Errorf("redis: reset: %w", err)
	}
	return nil
}

// Read returns the list (empty when the key is absent, as after a restart
// without persistence).
func (r *Resource) Read(ctx context.Context) ([]int64, error) {
	rctx, cancel := r.timeout(ctx)
	defer cancel()
	s, err := r.RDB.Get(rctx, r.Keys.Value).Result()
	list := []int64{}
	switch {
	case errors.Is(err, goredis.Nil):
		return list, nil
	case err != nil:
		return nil, fmt.Errorf("redis: read: %w", err)
	}
	if err := json.Unmarshal([]byte(s), &list); err != nil {
		return nil, fmt.Errorf("redis: read: value %q: %w", s, err)
	}
	return list, nil
}

// ReadFenced reads the list with token fencing (readTokenScript).
func (r *Resource) ReadFenced(ctx context.Context, held targets.Lease) ([]int64, error) {
	token := held.Token()
	rctx, cancel := r.timeout(ctx)
	defer cancel()
	res, err := readTokenScript.Eval(rctx, r.RDB, []string{r.Keys.Value, r.Keys.Fence}, token).Slice()
	if err != nil {
		return nil, fmt.Errorf("redis: fenced read: %w", err)
	}
	if len(res) != 2 {
		return nil, fmt.Errorf("redis: fenced read: unexpected reply %v", res)
	}
	s, _ := res[1].(string)
	if n, _ := res[0].(int64); n != 1 {
		return nil, fmt.Errorf("%w: read with token %d < highest accepted %s", targets.ErrFenced, token, s)
	}
	list := []int64{}
	if s == "" {
		return list, nil
	}
	if err := json.Unmarshal([]byte(s), &list); err != nil {
		return nil, fmt.Errorf("redis: read: value %q: %w", s, err)
	}
	return list, nil
}

// Write writes the list in one script, fenced as f says, and returns the
// write's revision (the rev key's INCR in the same script).
func (r *Resource) Write(ctx context.Context, list []int64, held targets.Lease, f targets.Fencing) (int64, error) {
	b, err := json.Marshal(list)
	if err != nil {
		return 0, err
	}
	var (
		script *goredis.Script
		keys   []string
		args   []any
		owner  Owner
	)
	if f == targets.FencingCAS {
		o, ok := held.(Owner)
		if !ok {
			return 0, fmt.Errorf("redis: %s fencing needs a Redis lease, not %T", f, held)
		}
		owner = o
	}
	switch f {
	case targets.FencingNone:
		script, keys, args = writeScript, []string{r.Keys.Value, r.Keys.Rev}, []any{string(b)}
	case targets.FencingToken:
		script, keys, args = tokenScript, []string{r.Keys.Value, r.Keys.Fence, r.Keys.Rev}, []any{string(b), held.Token()}
	case targets.FencingCAS:
		script, keys, args = casScript, []string{r.Keys.Value, r.Keys.Lock, r.Keys.Rev}, []any{string(b), owner.LockValue()}
	default:
		return 0, fmt.Errorf("redis: unknown fencing %q", f)
	}
	rctx, cancel := r.timeout(ctx)
	defer cancel()
	res, err := script.Eval(rctx, r.RDB, keys, args...).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("redis: write: %w", err)
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("redis: write: unexpected reply %v", res)
	}
	if res[0] == 1 {
		return res[1], nil
	}
	if f == targets.FencingToken {
		return 0, fmt.Errorf("%w: token %d < highest accepted %d", targets.ErrFenced, held.Token(), res[1])
	}
	return 0, fmt.Errorf("%w: lock key %s no longer holds this lease's value", targets.ErrFenced, r.Keys.Lock)
}
