#!/usr/bin/env python3
"""kazoo's Lock (kazoo.recipe.lock.Lock) as a fencecheck client program.

fencecheck starts this program in each worker container and talks to it over
stdin/stdout, one JSON object a line (docs/client-protocol.md). The program
implements the lock only: fencecheck reads and writes the run's resource
itself, with the token this program returns.

With --fencing none (the run's fencing reaches the program in init) it is
kazoo's Lock as its documentation gives it: one KazooClient per process
(session timeout = the run's TTL), zk.Lock(path, identifier), acquire with a
timeout, release, and a connection listener, because kazoo's docs say a
SUSPENDED connection means the lock can no longer be trusted and a LOST one
that it is gone. Its grants carry no token; the time left is the session
timeout while no SUSPENDED or LOST came since the grant, else 0.

With --fencing token it adds the lock znode's creation zxid (czxid) as the
token, and checks before each write that the znode still exists and is its
session's: the lease is then the session timeout from when it asked.

It answers held (--recheck, the belief sampler) as kazoo's docs tell an
application to judge its lock: Lock.is_acquired, and no SUSPENDED or LOST
connection state since the grant. It asks the server nothing.
"""
import json
import sys
import threading
import time

import kazoo.version
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, LockTimeout
from kazoo.handlers.threading import KazooTimeoutError


class Client:
    def __init__(self, init):
        self.ttl = init["ttl_ms"] / 1000.0
        self.rpc = init.get("rpc_timeout_ms", 5000) / 1000.0
        self.fenced = init.get("fencing", "none") != "none"
        self.interruptions = 0
        self.at_grant = None
        self.mu = threading.Lock()
        self.zk = KazooClient(hosts=",".join(init["endpoints"]),
                              timeout=self.ttl, connection_retry={"max_tries": 3},
                              command_retry={"max_tries": 3})
        self.zk.add_listener(self.on_state)
        self.zk.start(timeout=self.rpc)
        self.lock = self.zk.Lock(init["prefix"] + "/client-lock", "fencecheck")
        self.held = False
        self.token = None

    def on_state(self, state):
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            with self.mu:
                self.interruptions += 1
        print("kazoo: connection %s" % state, file=sys.stderr, flush=True)

    def interrupted(self):
        with self.mu:
            return self.interruptions != self.at_grant

    def acquire(self, req):
        if self.held:
            return error("fail", "already holding the lock")
        with self.mu:
            before = self.interruptions
        try:
            ok = self.lock.acquire(timeout=req["timeout_ms"] / 1000.0)
        except LockTimeout:
            return error("fail", "lock not acquired within %d ms" % req["timeout_ms"])
        except (KazooException, KazooTimeoutError) as e:
            # The lock's znode may have been created: we cannot vouch for it.
            return error("info", "acquire: %r" % e)
        if not ok:
            return error("fail", "lock not acquired within %d ms" % req["timeout_ms"])
        self.at_grant = before
        self.held = True
        reply = {}
        if self.fenced:
            try:
                stat = self.zk.exists(self.node_path())
            except (KazooException, KazooTimeoutError):
                stat = None
            if stat is None:
                self.held = False
                try:
                    self.lock.release()
                except (KazooException, KazooTimeoutError):
                    pass
                return error("info", "acquired, but the lock znode could not be read")
            self.token = stat.czxid
            reply["token"] = self.token
        reply["remaining_ms"] = self.remaining_ms()
        return reply

    def node_path(self):
        return self.lock.path + "/" + self.lock.node

    def remaining_ms(self):
        if not self.held or self.interrupted():
            return 0
        if not self.fenced:
            return int(self.ttl * 1000)
        sent = time.monotonic()
        try:
            stat = self.zk.exists(self.node_path())
        except (KazooException, KazooTimeoutError):
            return 0
        if stat is None or stat.ephemeralOwner != self.zk.client_id[0] or self.interrupted():
            return 0
        return max(0, int((self.ttl - (time.monotonic() - sent)) * 1000))

    def believes(self):
        return {"held": bool(self.held and self.lock.is_acquired and not self.interrupted())}

    def release(self, req):
        if not self.held:
            return error("fail", "no lock held")
        self.held = False
        try:
            self.lock.release()
        except (KazooException, KazooTimeoutError) as e:
            return error("info", "release: %r" % e)
        return {}


def error(kind, message):
    return {"type": "error", "kind": kind, "message": message}


def main():
    client = None
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        try:
            if kind == "init":
                client = Client(req)
                reply = {"implements": ["lock", "held"], "tokens": client.fenced,
                         "name": "kazoo %s Lock" % kazoo.version.__version__}
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
        except KazooTimeoutError as e:
            reply = error("fail", "%s: %r" % (kind, e))
        reply.setdefault("type", kind + "_ok")
        reply["id"] = req["id"]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
