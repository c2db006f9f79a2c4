#!/usr/bin/env python3
"""python-etcd3's Lock (etcd3.Lock) as a fencecheck client program.

fencecheck starts this program in each worker container and talks to it over
stdin/stdout, one JSON object a line (docs/client-protocol.md). The program
implements the lock only: fencecheck reads and writes the run's resource
itself, with the token this program returns.

The recipe is the one python-etcd3's documentation gives: client.lock(name,
ttl), acquire(timeout), release(). As Debian ships it (0.12.0 with tenacity
8), acquire() cannot wait: it raises TypeError the moment the lock is held
by another client (see acquire below), so here a contended acquire fails
and the worker tries again, as an application's retry loop would. The lock is a key put under a lease of
ttl seconds (whole seconds, at least 1), and the library does not keep the
lease alive: the lock lasts ttl from its grant unless the caller refreshes
it. The time left is the ttl from when the grant was asked for.

Token (with --fencing token, which reaches the program in init): the lock
key's create revision, read after the grant, and only if the key still holds
this lock's uuid (python-etcd3 gives no revision of its own): a holder
stalled between the grant and the read would otherwise take a later
holder's revision for its own, as a run on a loaded machine showed. etcd's
revisions only grow, so every grant's token is higher than the last. Unfenced, the grants carry none.

It answers held (--recheck, the belief sampler) with the library's own
question, Lock.is_acquired(): a get of the lock's key compared with the
lock's uuid. When the server does not answer in time the library raises
and the answer is false.
"""
import json
import sys
import time

import etcd3
import etcd3.exceptions


class Client:
    def __init__(self, init):
        host, _, port = init["endpoints"][0].rpartition(":")
        self.rpc = init.get("rpc_timeout_ms", 5000) / 1000.0
        self.ttl = max(1, int(init["ttl_ms"] / 1000))
        self.fenced = init.get("fencing", "none") != "none"
        self.etcd = etcd3.client(host=host, port=int(port), timeout=self.rpc)
        self.name = init["prefix"] + "/client-lock"
        self.lock = None
        self.granted_at = None

    def acquire(self, req):
        if self.lock is not None:
            return error("fail", "already holding the lock")
        lock = self.etcd.lock(self.name, ttl=self.ttl)
        timeout = req["timeout_ms"] / 1000.0
        deadline = time.monotonic() + timeout
        try:
            # acquire() grants the lease, then tries to put the key; the
            # lease runs from its grant at the latest.
            started = time.monotonic()
            ok = lock.acquire(timeout=max(1, int(timeout)))
        except etcd3.exceptions.Etcd3Exception as e:
            return error("info", "acquire: %r" % e)
        except TypeError as e:
            # python-etcd3 0.12.0 waits for a held lock with a tenacity wait
            # callback of two arguments; Debian bookworm's tenacity 8 calls
            # it with one, so acquire() raises as soon as it has to wait. Its
            # transaction found the key taken: nothing was granted (the
            # lease it took for the attempt is left to expire).
            return error("fail", "acquire: the lock is held, and python-etcd3's wait for it failed: %s" % e)
        if not ok or time.monotonic() > deadline + 1:
            if ok:
                self.safe_release(lock)
            return error("fail", "lock not acquired within %d ms" % req["timeout_ms"])
        self.lock, self.granted_at = lock, started
        reply = {}
        if self.fenced:
            try:
                value, meta = self.etcd.get(lock.key)
            except etcd3.exceptions.Etcd3Exception:
                value, meta = None, None
            if meta is None and value is None:
                self.safe_release(lock)
                self.lock = None
                return error("info", "acquired, but the lock key could not be read")
            if value != lock.uuid:
                # The lease lapsed between the grant and the read (a
                # stalled process), and the key is another holder's now:
                # its create revision is not this grant's token.
                self.safe_release(lock)
                self.lock = None
                return error("fail", "the lock was lost before its token could be read")
            reply["token"] = meta.create_revision
        reply["remaining_ms"] = self.remaining_ms()
        return reply

    def safe_release(self, lock):
        try:
            lock.release()
        except etcd3.exceptions.Etcd3Exception:
            pass

    def remaining_ms(self):
        if self.lock is None:
            return 0
        left = self.ttl - (time.monotonic() - self.granted_at)
        return max(0, int(left * 1000))

    def believes(self):
        if self.lock is None:
            return {"held": False}
        try:
            return {"held": bool(self.lock.is_acquired())}
        except etcd3.exceptions.Etcd3Exception:
            return {"held": False}

    def release(self, req):
        lock, self.lock = self.lock, None
        if lock is None:
            return error("fail", "no lock held")
        try:
            if not lock.release():
                return error("fail", "release: the lock was no longer ours")
        except etcd3.exceptions.Etcd3Exception as e:
            return error("info", "release: %r" % e)
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
                     "name": "python-etcd3 %s Lock" % etcd3.__version__}
        elif client is None:
            reply = error("fail", "%s before init" % kind)
        elif kind == "acquire":
            reply = client.acquire(req)
        elif kind == "remaining":
            reply = {"remaining_ms": client.remaining_ms()}
        elif kind == "held":
            reply = client.believes()
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
