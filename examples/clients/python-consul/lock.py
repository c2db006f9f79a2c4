#!/usr/bin/env python3
"""A Consul session lock with python-consul (Debian's python3-consul 0.7.1)
as a fencecheck client program.

fencecheck starts this program in each worker container and talks to it over
stdin/stdout, one JSON object a line (docs/client-protocol.md). The program
implements the lock only: fencecheck reads and writes the run's resource
itself, with the token this program returns.

python-consul has no lock object; the recipe is the one Consul's leader
election guide gives, in python-consul's calls: a session with a TTL (the
run's TTL) and the run's lock-delay (behavior "release"), kv.put(key,
acquire=session) until it returns True (between tries a blocking kv.get on
the key, woken when it changes), the session renewed every third of its TTL
in a thread of its own while the lock is held, and release: kv.put(key,
release=session), then the session destroyed. The time left is the TTL from
when the last renewal (or the session's creation) was sent: Consul does not
invalidate a session sooner.

Token (with --fencing token, which reaches the program in init): the lock
key's ModifyIndex read after the grant; Consul's indexes only grow.
Unfenced, the grants carry none.

It answers held (--recheck, the belief sampler) with the recipe's own
deadline: held while the TTL from the last renewal sent has not passed and
no renewal found the session gone. python-consul has no lock object to ask.
"""
import json
import sys
import threading
import time

import consul


class Client:
    def __init__(self, init):
        host, _, port = init["endpoints"][0].rpartition(":")
        self.rpc = init.get("rpc_timeout_ms", 5000) / 1000.0
        self.ttl = max(10, int(round(init["ttl_ms"] / 1000)))
        self.lock_delay = int(init.get("lock_delay_ms") or 0) // 1000
        self.fenced = init.get("fencing", "none") != "none"
        self.consul = consul.Consul(host=host, port=int(port))
        self.key = init["prefix"].lstrip("/") + "/client-lock"
        self.session = None
        self.renewed_at = None
        self.stop = None
        self.mu = threading.Lock()

    def acquire(self, req):
        if self.session is not None:
            return error("fail", "already holding the lock")
        deadline = time.monotonic() + req["timeout_ms"] / 1000.0
        sent = time.monotonic()
        try:
            session = self.consul.session.create(ttl=self.ttl, lock_delay=self.lock_delay, behavior="release")
        except Exception as e:  # python-consul raises requests' and its own
            return error("fail", "session: %r" % e)
        index = None
        while True:
            try:
                if self.consul.kv.put(self.key, "fencecheck", acquire=session):
                    break
            except Exception as e:
                self.destroy(session)
                return error("info", "acquire: %r" % e)
            left = deadline - time.monotonic()
            if left <= 0:
                self.destroy(session)
                return error("fail", "lock not acquired within %d ms" % req["timeout_ms"])
            try:
                index, _ = self.consul.kv.get(self.key, index=index, wait="%dms" % max(1, int(min(left, self.rpc / 2) * 1000)))
            except Exception as e:
                self.destroy(session)
                return error("fail", "waiting for the lock: %r" % e)
        with self.mu:
            self.session, self.renewed_at = session, sent
        self.stop = threading.Event()
        threading.Thread(target=self.renew, args=(session, self.stop), daemon=True).start()
        reply = {}
        if self.fenced:
            try:
                _, data = self.consul.kv.get(self.key)
            except Exception:
                data = None
            if not data or data.get("Session") != session:
                self.release(None)
                return error("info", "acquired, but the lock key could not be read as ours")
            reply["token"] = data["ModifyIndex"]
        reply["remaining_ms"] = self.remaining_ms()
        return reply

    def renew(self, session, stop):
        while not stop.wait(self.ttl / 3.0):
            sent = time.monotonic()
            try:
                ok = self.consul.session.renew(session)
            except Exception as e:
                print("consul: renew: %r" % e, file=sys.stderr, flush=True)
                continue
            with self.mu:
                if self.session != session:
                    return
                if ok is None:
                    # The session is gone (invalidated): no time is left.
                    self.renewed_at = float("-inf")
                    return
                self.renewed_at = sent

    def remaining_ms(self):
        with self.mu:
            if self.session is None:
                return 0
            left = self.ttl - (time.monotonic() - self.renewed_at)
        return max(0, int(left * 1000))

    def destroy(self, session):
        try:
            self.consul.session.destroy(session)
        except Exception:
            pass

    def release(self, req):
        with self.mu:
            session, self.session = self.session, None
        if session is None:
            return error("fail", "no lock held")
        self.stop.set()
        try:
            released = self.consul.kv.put(self.key, "fencecheck", release=session)
        except Exception as e:
            self.destroy(session)
            return error("info", "release: %r" % e)
        self.destroy(session)
        if not released:
            return error("fail", "release: the lock was no longer ours")
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
                     "name": "python-consul %s session lock" % consul.__version__}
        elif client is None:
            reply = error("fail", "%s before init" % kind)
        elif kind == "acquire":
            reply = client.acquire(req)
        elif kind == "remaining":
            reply = {"remaining_ms": client.remaining_ms()}
        elif kind == "held":
            reply = {"held": client.remaining_ms() > 0}
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
