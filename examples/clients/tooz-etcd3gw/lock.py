#!/usr/bin/env python3
"""OpenStack tooz's etcd3gw driver (tooz.drivers.etcd3gw.Etcd3Lock) as a
fencecheck client program.

fencecheck starts this program in each worker container and talks to it over
stdin/stdout, one JSON object a line (docs/client-protocol.md). The program
implements the lock only: fencecheck reads and writes the run's resource
itself.

The recipe is the one tooz's documentation gives: a coordinator from
tooz.coordination.get_coordinator('etcd3+http://HOST:PORT', member_id),
started with its heart (start(start_heart=True): the driver requires
beating, and the heart calls coordinator.heartbeat() in a thread, which
refreshes the membership lease and the lease of every lock the coordinator
holds), one lock from coordinator.get_lock(name), and lock.acquire() and
lock.release(). As Debian bookworm ships it (tooz 3.1.0, etcd3gw 2.0.0) the
driver talks to etcd's grpc-gateway (HTTP and JSON on the client port) of
one host only, so the program uses the run's first endpoint. Its options
are given in the URL: api_version=v3 (the driver's default, v3alpha, is a
path etcd 3.5 and later no longer serve), lock_timeout and
membership_timeout = the run's TTL in whole seconds (tooz parses them with
int(); at least 1), timeout = the RPC timeout in whole seconds.

The lock is an etcd key, /tooz/locks + NAME (tooz puts every lock under
/tooz/locks; NAME is the run's PREFIX/client-lock), put by a transaction
under a lease of lock_timeout seconds, granted just before it. tooz keeps no
revision of the put and exposes nothing a token could be made of (its own
comment: "TODO(jd): save the created revision"): the grants carry no token,
and a run with --fencing token is refused (client.json says tokens false).

acquire: lock.acquire(blocking=False), tried again every 100 ms until the
request's timeout. tooz can wait itself (blocking=SECONDS), but then the
caller cannot tell which of its tries granted the lease; each try here
grants a fresh lease (tooz's own code) and the time left is counted from the
start of the try that won.

remaining: the TTL from the start of the winning try. The heart renews the
lease in the background, but tooz tells its caller neither when a renewal
succeeded nor whether it did (below), so a careful caller counts from the
grant only.

held (--recheck, the belief sampler): the lock's own `acquired` property,
tooz's answer to "do I hold this lock?". It asks the server nothing: it is
true while the lock object is in the coordinator's set of acquired locks,
which acquire() adds it to and only a release() whose transaction succeeded
removes it from. Nothing else takes it out: Etcd3Lock.heartbeat() calls the
lease's refresh() and returns True without looking at the answer, and
etcd3gw's Lease.refresh() returns -1 for a lease that has expired (the
keepalive reply has no TTL then); the coordinator's heartbeat() checks that
-1 for its membership lease (and takes a new one) but not for the locks'.
The heart retries a heartbeat that raised (a server out of reach) every
second and tells nobody. So once the lease has lapsed (a paused or cut-off
holder) the library goes on saying "acquired", and a release() that then
finds the key gone or another's returns False and leaves it "acquired" for
the life of the process. The run's belief windows measure exactly that.

As Debian bookworm pairs them, the driver cannot start at all: tooz 3.1.0
calls etcd3gw.client(..., api_path=...), a keyword etcd3gw's factory
function only takes from 2.1.0 on, while tooz declares etcd3gw>=0.1.0 and
Debian's package depends on python3-etcd3gw unversioned; with 2.0.0
get_coordinator() raises TypeError ("client() got an unexpected keyword
argument 'api_path'"). etcd3gw 2.0.0's Etcd3Client itself takes api_path,
so the program, when the factory lacks the keyword, replaces the factory
with one that passes every argument to Etcd3Client (compat_etcd3gw below).
Nothing of tooz's lock is changed.

etcd3gw's client sets its timeout on the requests Session (session.timeout),
an attribute requests does not read: its HTTP requests have no timeout, so a
request to a server out of reach waits as long as TCP does. fencecheck
retires a program that does not answer in time, so a cut-off acquire or
release ends as an unknown (info) outcome and a fresh process.
"""
import importlib.metadata
import inspect
import json
import logging
import sys
import time
import uuid

import etcd3gw
import tooz
from tooz import coordination

RETRY = 0.1  # seconds between two tries of a contended acquire


def compat_etcd3gw():
    """Lets tooz 3.1.0 start with etcd3gw 2.0.0 (see the module's comment):
    an etcd3gw.client() that also takes api_path, as 2.1.0's does. tooz's
    driver looks etcd3gw.client up when it builds its client."""
    if "api_path" in inspect.signature(etcd3gw.client).parameters:
        return False

    def client(host="localhost", port=2379, ca_cert=None, cert_key=None,
               cert_cert=None, timeout=None, protocol="http", api_path=None):
        kwargs = {} if api_path is None else {"api_path": api_path}
        return etcd3gw.Etcd3Client(host=host, port=port, ca_cert=ca_cert,
                                   cert_key=cert_key, cert_cert=cert_cert,
                                   timeout=timeout, protocol=protocol, **kwargs)

    etcd3gw.client = client
    return True


def version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


class Client:
    def __init__(self, init):
        self.ttl = max(1, int(init["ttl_ms"] / 1000))
        rpc = max(1, int(round(init.get("rpc_timeout_ms", 5000) / 1000.0)))
        url = ("etcd3+http://%s/?api_version=v3&timeout=%d&lock_timeout=%d"
               "&membership_timeout=%d" % (init["endpoints"][0], rpc,
                                           self.ttl, self.ttl))
        member = ("fencecheck-" + uuid.uuid4().hex).encode()
        self.coordinator = coordination.get_coordinator(url, member)
        self.coordinator.start(start_heart=True)
        self.lock = self.coordinator.get_lock(
            (init["prefix"] + "/client-lock").encode())
        self.holding = False
        self.granted_at = None

    def acquire(self, req):
        if self.holding:
            return error("fail", "already holding the lock")
        deadline = time.monotonic() + req["timeout_ms"] / 1000.0
        while True:
            started = time.monotonic()
            try:
                ok = self.lock.acquire(blocking=False)
            except tooz.ToozError as e:
                # The lease grant or the transaction did not answer: the
                # put may have been applied.
                return error("info", "acquire: %r" % e)
            if ok:
                break
            if time.monotonic() + RETRY > deadline:
                return error("fail", "lock not acquired within %d ms" % req["timeout_ms"])
            time.sleep(RETRY)
        self.holding, self.granted_at = True, started
        left = self.remaining_ms()
        if left == 0:
            # The try that won took the whole lease: it may have lapsed.
            self.release(req)
            return error("info", "acquired, but only after the lease's %d s had passed" % self.ttl)
        return {"remaining_ms": left}

    def remaining_ms(self):
        if not self.holding:
            return 0
        left = self.ttl - (time.monotonic() - self.granted_at)
        return max(0, int(left * 1000))

    def believes(self):
        # tooz's own belief, local: see the module's comment.
        return {"held": bool(self.lock.acquired)}

    def release(self, req):
        if not self.holding:
            return error("fail", "no lock held")
        self.holding = False
        try:
            ok = self.lock.release()
        except tooz.ToozError as e:
            return error("info", "release: %r" % e)
        if not ok:
            # The transaction compared the key's value with the lock's
            # uuid and found it gone or another's: nothing was deleted.
            return error("fail", "release: the lock was no longer ours (tooz still says acquired=%s)"
                         % self.lock.acquired)
        return {}


def error(kind, message):
    return {"type": "error", "kind": kind, "message": message}


def main():
    # The heart logs a heartbeat that raised (WARNING): the worker's log.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if compat_etcd3gw():
        print("etcd3gw %s: its client() takes no api_path, which tooz passes: "
              "passed through to Etcd3Client" % version("etcd3gw"),
              file=sys.stderr, flush=True)
    client = None
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        try:
            if kind == "init":
                client = Client(req)
                reply = {"implements": ["lock", "held"], "tokens": False,
                         "name": "tooz %s etcd3gw %s Lock" % (version("tooz"), version("etcd3gw"))}
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
        except tooz.ToozError as e:
            reply = error("info", "%s: %r" % (kind, e))
        reply.setdefault("type", kind + "_ok")
        reply["id"] = req["id"]
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
