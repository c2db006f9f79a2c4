#!/usr/bin/env python3
"""redis-py's own Lock (redis.lock.Lock) as a fencecheck client program.

fencecheck starts this program in each worker container and talks to it over
stdin/stdout, one JSON object a line (docs/client-protocol.md). The program
implements the lock only: fencecheck reads and writes the run's resource
itself, with the token this program returns.

redis-py's Lock has no fencing token. With --fencing none this program uses
it exactly as an application would, and a holder paused past its timeout
writes over the next holder's update. With --fencing token (the run's
fencing reaches the program in init) it grants the lock and a token in one
Lua script: SET NX PX, then INCR of a counter, so every grant carries a
number that grows. The resource refuses a write whose token is lower than
one it has seen. That is all it takes to add fencing to redis-py's lock.

It answers held (--recheck, the belief sampler) with the library's own
question, Lock.owned(): a GET of the lock's key compared with the lock's
token. redis-py keeps no local deadline, so this is what an application
using redis-py can ask; when the server does not answer in time, owned()
raises and the answer is false (the application cannot say it holds it).
"""
import json
import sys
import time

import redis
from redis.lock import Lock

# Lua: take the lock and, in the same atomic step, the next fencing token.
GRANT = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return redis.call('incr', KEYS[2])
end
return false
"""


class TimedLock(Lock):
    """redis-py's Lock, remembering when its grant was asked for: the lock's
    timeout runs from then at the latest, so the time left is the timeout
    minus the time since."""

    granted_at = None

    def do_acquire(self, token):
        started = time.monotonic()
        if super().do_acquire(token):
            self.granted_at = started
            return True
        return False


class FencedLock(TimedLock):
    """redis-py's Lock whose grant also takes a fencing token."""

    fencing_token = None

    def __init__(self, *args, token_key, **kwargs):
        super().__init__(*args, **kwargs)
        self.token_key = token_key
        self.grant = self.redis.register_script(GRANT)

    def do_acquire(self, token):
        started = time.monotonic()
        n = self.grant(keys=[self.name, self.token_key],
                       args=[token, int(self.timeout * 1000)])
        if n:
            self.granted_at = started
            self.fencing_token = int(n)
            return True
        return False


class Client:
    def __init__(self, init):
        host, _, port = init["endpoints"][0].rpartition(":")
        rpc = init.get("rpc_timeout_ms", 5000) / 1000.0
        self.redis = redis.Redis(host=host, port=int(port),
                                 socket_timeout=rpc, socket_connect_timeout=rpc)
        self.ttl = init["ttl_ms"] / 1000.0
        self.fenced = init.get("fencing", "none") != "none"
        self.name = init["prefix"] + "/client-lock"
        self.token_key = init["prefix"] + "/client-token"
        self.lock = None

    def new_lock(self):
        if self.fenced:
            return FencedLock(self.redis, self.name, timeout=self.ttl,
                              sleep=0.05, token_key=self.token_key)
        return TimedLock(self.redis, self.name, timeout=self.ttl, sleep=0.05)

    def acquire(self, req):
        lock = self.new_lock()
        try:
            ok = lock.acquire(blocking=True,
                              blocking_timeout=req["timeout_ms"] / 1000.0)
        except redis.RedisError as e:
            # The SET may have been applied: we cannot vouch for it.
            return error("info", "acquire: %s" % e)
        if not ok:
            return error("fail", "lock not acquired within %d ms" % req["timeout_ms"])
        self.lock = lock
        reply = {"remaining_ms": self.remaining_ms()}
        if self.fenced:
            reply["token"] = lock.fencing_token
        return reply

    def remaining_ms(self):
        if self.lock is None or self.lock.granted_at is None:
            return 0
        left = self.ttl - (time.monotonic() - self.lock.granted_at)
        return max(0, int(left * 1000))

    def held(self):
        if self.lock is None:
            return {"held": False}
        try:
            return {"held": bool(self.lock.owned())}
        except redis.RedisError:
            return {"held": False}

    def release(self, req):
        lock, self.lock = self.lock, None
        if lock is None:
            return error("fail", "no lock held")
        try:
            lock.release()
        except redis.exceptions.LockNotOwnedError as e:
            return error("fail", "release: %s" % e)
        except redis.RedisError as e:
            return error("info", "release: %s" % e)
        return {}


def error(kind, message):
    return {"type": "error", "kind": kind, "message": message}


def main():
    client = None
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "init":
            client = Client(req)
            reply = {"implements": ["lock", "held"], "tokens": client.fenced,
                     "name": "redis-py %s Lock" % redis.__version__}
        elif kind == "acquire":
            reply = client.acquire(req)
        elif kind == "remaining":
            reply = {"remaining_ms": client.remaining_ms()}
        elif kind == "held":
            reply = client.held()
        elif kind == "release":
            reply = client.release(req)
        else:
            reply = error("fail", "unknown request %r" % kind)
        reply.setdefault("type", kind + "_ok")
        reply["id"] = req["id"]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
