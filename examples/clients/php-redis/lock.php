<?php
// phpredis (Debian's php-redis 5.3.7) with the lock recipe of the Redis
// documentation, as a fencecheck client program.
//
// fencecheck starts this program in each worker container and talks to it
// over stdin/stdout, one JSON object a line (docs/client-protocol.md). The
// program implements the lock only: fencecheck reads and writes the run's
// resource itself, with the token this program returns.
//
// The recipe (the single-instance part of the Redis documentation's
// distributed-locks page): SET key random-value NX PX ttl to take the lock,
// retried until the acquire's deadline; release with a script that deletes
// the key only if it still holds this client's value. The lock is a lease
// without renewal: the time left is the TTL from when the winning SET was
// sent.
//
// Token (with --fencing token, which reaches the program in init): an INCR
// of a counter in the same script as the SET NX PX, so that every grant
// carries a number that grows. Unfenced, the grants carry none.
//
// It answers held (--recheck, the belief sampler) with the recipe's own
// deadline, as the Redis documentation's careful client would: held while
// the TTL from the winning SET has not passed. It asks the server nothing.

const GRANT = <<<'LUA'
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
return false
LUA;
const RELEASE = <<<'LUA'
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
LUA;

function error_reply(string $kind, string $message): array
{
    return ['type' => 'error', 'kind' => $kind, 'message' => $message];
}

function now(): float
{
    return hrtime(true) / 1e9;
}

final class Client
{
    public bool $fenced;
    private Redis $redis;
    private int $ttl;
    private string $key;
    private string $tokenKey;
    private ?array $held = null;

    public function __construct(array $req)
    {
        $ep = $req['endpoints'][0];
        $i = strrpos($ep, ':');
        $rpc = ($req['rpc_timeout_ms'] ?? 5000) / 1000.0;
        $this->ttl = (int) $req['ttl_ms'];
        $this->fenced = ($req['fencing'] ?? 'none') !== 'none';
        $this->key = $req['prefix'] . '/client-lock';
        $this->tokenKey = $req['prefix'] . '/client-token';
        $this->redis = new Redis();
        $this->redis->connect(substr($ep, 0, $i), (int) substr($ep, $i + 1), $rpc, null, 0, $rpc);
    }

    public function acquire(array $req): array
    {
        if ($this->held !== null) {
            return error_reply('fail', 'already holding the lock');
        }
        $deadline = now() + $req['timeout_ms'] / 1000.0;
        $value = bin2hex(random_bytes(16));
        for (;;) {
            $sent = now();
            try {
                if ($this->fenced) {
                    $got = $this->redis->eval(GRANT, [$this->key, $this->tokenKey, $value, $this->ttl], 2);
                } else {
                    $got = $this->redis->set($this->key, $value, ['nx', 'px' => $this->ttl]);
                }
            } catch (RedisException $e) {
                // The SET may have been applied: we cannot vouch for it.
                return error_reply('info', 'acquire: ' . $e->getMessage());
            }
            if ($got !== false && $got !== null) {
                $this->held = ['value' => $value, 'granted_at' => $sent];
                $reply = ['remaining_ms' => $this->remaining()];
                if ($this->fenced) {
                    $reply['token'] = (int) $got;
                }
                return $reply;
            }
            if (now() >= $deadline) {
                return error_reply('fail', "lock not acquired within {$req['timeout_ms']} ms");
            }
            usleep(50000);
        }
    }

    public function remaining(): int
    {
        if ($this->held === null) {
            return 0;
        }
        return max(0, (int) floor($this->ttl - (now() - $this->held['granted_at']) * 1000));
    }

    public function release(): array
    {
        $h = $this->held;
        $this->held = null;
        if ($h === null) {
            return error_reply('fail', 'no lock held');
        }
        try {
            $n = $this->redis->eval(RELEASE, [$this->key, $h['value']], 1);
        } catch (RedisException $e) {
            return error_reply('info', 'release: ' . $e->getMessage());
        }
        if ($n !== 1) {
            return error_reply('fail', 'release: the lock was no longer ours');
        }
        return [];
    }
}

$client = null;
while (($line = fgets(STDIN)) !== false) {
    $req = json_decode($line, true);
    $kind = $req['type'];
    try {
        if ($kind === 'init') {
            $client = new Client($req);
            $reply = ['implements' => ['lock', 'held'], 'tokens' => $client->fenced,
                'name' => 'phpredis ' . phpversion('redis') . ' SET NX PX lock'];
        } elseif ($client === null) {
            $reply = error_reply('fail', "$kind before init");
        } elseif ($kind === 'acquire') {
            $reply = $client->acquire($req);
        } elseif ($kind === 'remaining') {
            $reply = ['remaining_ms' => $client->remaining()];
        } elseif ($kind === 'held') {
            $reply = ['held' => $client->remaining() > 0];
        } elseif ($kind === 'release') {
            $reply = $client->release();
        } else {
            $reply = error_reply('fail', 'unknown request ' . json_encode($kind));
        }
    } catch (RedisException $e) {
        $reply = error_reply('fail', "$kind: " . $e->getMessage());
    }
    $reply['type'] ??= $kind . '_ok';
    $reply['id'] = $req['id'];
    fwrite(STDOUT, json_encode($reply) . "\n");
    fflush(STDOUT);
}
