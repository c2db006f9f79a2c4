#!/usr/bin/env python3
"""tooz's etcd3gw driver: a lock whose lease expired still says `acquired`.

A standalone reproduction (no fencecheck): one etcd, two tooz coordinators.

  1. A child process (holder A) starts a coordinator with its heart
     (start(start_heart=True), tooz's recipe) and takes the lock.
  2. The parent stops the child with SIGSTOP (a long GC or VM pause, a
     swapped-out process: anything that freezes it) for longer than the
     lock's lease (lock_timeout).
  3. The parent's own coordinator (B) tries the same lock every 50 ms and
     is granted it once the lease has expired.
  4. The parent resumes A with SIGCONT and waits for A's heart to beat a
     few times, then asks A what it believes: `lock.acquired`, what
     `lock.heartbeat()` returns, what the lease's refresh() (the call the
     heartbeat makes) returns, and whose value the lock key holds on etcd.
  5. A calls release(), then reports `acquired` again; then A tries
     acquire(blocking=False) while B still holds the lock, and reports
     what it returned and `acquired`.

Exit status 1 when A's lock says `acquired` after B was granted the lock
(the bug), 0 when it does not, 2 when the reproduction could not run.

    python3 repro.py --etcd 127.0.0.1:2379 [--ttl 2] [--trials 3]

Debian bookworm pairs tooz 3.1.0 with etcd3gw 2.0.0, whose client() does
not take the api_path keyword tooz passes; with that pair this program
wraps etcd3gw.client (see compat_etcd3gw). Nothing of tooz is changed.
"""
import argparse
import base64
import importlib.metadata
import inspect
import json
import os
import signal
import subprocess
import sys
import time
import uuid

import etcd3gw
from tooz import coordination


def compat_etcd3gw():
    """etcd3gw < 2.1.0: make etcd3gw.client() accept api_path.

    tooz 3.1.0 calls etcd3gw.client(..., api_path=...); etcd3gw 2.0.0's
    factory lacks the keyword but its Etcd3Client takes it. Returns True
    when the wrapper was installed."""
    factory = etcd3gw.client
    if "api_path" in inspect.signature(factory).parameters:
        return False

    def client_with_api_path(api_path=None, **kwargs):
        if api_path is not None:
            kwargs["api_path"] = api_path
        return etcd3gw.Etcd3Client(**kwargs)

    etcd3gw.client = client_with_api_path
    return True


def version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def coordinator(etcd, ttl, member):
    # api_version=v3: 3.1.0's default (v3alpha) is gone from etcd >= 3.5.
    url = ("etcd3+http://%s/?api_version=v3&timeout=5&lock_timeout=%d"
           "&membership_timeout=%d" % (etcd, ttl, ttl))
    coord = coordination.get_coordinator(url, member)
    coord.start(start_heart=True)
    return coord


def key_owner(lock):
    """Whose uuid the lock key holds on etcd, as this lock sees it."""
    values = lock._coord.client.get(lock._key)
    if not values:
        return "absent"
    return "its own" if values[0] == base64.b64decode(lock._uuid) else "another's"


def emit(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def holder(args):
    """Holder A, run as a child process; answers commands on stdin."""
    coord = coordinator(args.etcd, args.ttl, b"repro-A-" + uuid.uuid4().hex.encode())
    lock = coord.get_lock(args.lock.encode())
    ok = lock.acquire(blocking=False)
    emit(event="acquired", ok=ok, lease=lock._lease.id if ok else None,
         beats=coord.heart.beats)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "status":
            emit(event="status",
                 acquired=lock.acquired,                   # tooz's belief
                 beats=coord.heart.beats,                  # heartbeats so far
                 heartbeat=lock.heartbeat(),               # what tooz's heartbeat returns
                 refresh=lock._lease.refresh(),            # what it ignored (-1: expired)
                 lease_ttl=lock._lease.ttl(),              # etcd's view of the lease
                 key=key_owner(lock))                      # etcd's view of the key
        elif cmd == "release":
            released = lock.release()
            emit(event="released", released=released, acquired=lock.acquired)
        elif cmd == "retry":
            # B still holds the lock: acquire() must fail.
            got = lock.acquire(blocking=False)
            emit(event="retried", got=got, acquired=lock.acquired)
        elif cmd == "stop":
            break
    coord.stop()


def trial(args, n):
    name = "/repro-%s" % uuid.uuid4().hex[:12]
    child = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--holder", "--lock", name,
         "--etcd", args.etcd, "--ttl", str(args.ttl)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def tell(cmd):
        child.stdin.write(cmd + "\n")
        child.stdin.flush()

    def ask(cmd):
        tell(cmd)
        return json.loads(child.stdout.readline())

    first = json.loads(child.stdout.readline())
    if not first.get("ok"):
        print("trial %d: holder A was not granted the lock: %r" % (n, first))
        child.kill()
        return None
    print("trial %d: A acquired %s (lease %x, lock_timeout %d s)"
          % (n, name, first["lease"], args.ttl))
    # Let A's heart beat once or twice: the lease is being refreshed.
    time.sleep(args.ttl)
    before = ask("status")
    print("  before the pause: A acquired=%s, heart beats=%d, lock.heartbeat()=%s, "
          "lease.refresh()=%s, lease ttl()=%s, lock key on etcd: %s"
          % (before["acquired"], before["beats"], before["heartbeat"],
             before["refresh"], before["lease_ttl"], before["key"]))

    coord_b = coordinator(args.etcd, args.ttl, b"repro-B-" + uuid.uuid4().hex.encode())
    lock_b = coord_b.get_lock(name.encode())
    try:
        stopped = time.monotonic()
        os.kill(child.pid, signal.SIGSTOP)
        granted = None
        deadline = stopped + args.pause
        while time.monotonic() < deadline:
            if granted is None and lock_b.acquire(blocking=False):
                granted = time.monotonic()
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGCONT)
        resumed = time.monotonic()
        if granted is None:
            print("  B was not granted the lock during A's %.1f s pause" % args.pause)
            tell("stop")
            return None
        print("  A paused %.2f s; B granted the lock %.2f s into the pause"
              % (resumed - stopped, granted - stopped))
        # Give A's heart time to beat (it beats every ~lock_timeout/2 s, and
        # retries a failed beat every second).
        time.sleep(2 * args.ttl)
        st = ask("status")
        since = time.monotonic() - granted
        print("  after: A, %.2f s after B's grant and %.2f s after resuming: acquired=%s, "
              "heart beats=%d, lock.heartbeat()=%s, lease.refresh()=%s, lease ttl()=%s, "
              "lock key on etcd: %s"
              % (since, time.monotonic() - resumed, st["acquired"], st["beats"],
                 st["heartbeat"], st["refresh"], st["lease_ttl"], st["key"]))
        b_key = key_owner(lock_b)
        print("  B: acquired=%s, lock key on etcd: %s" % (lock_b.acquired, b_key))
        rel = ask("release")
        print("  A: release() -> %s, then acquired=%s" % (rel["released"], rel["acquired"]))
        again = ask("retry")
        print("  A: acquire(blocking=False) while B holds it -> %s, then acquired=%s"
              % (again["got"], again["acquired"]))
        tell("stop")
        child.wait(timeout=30)
        bug = st["acquired"] and lock_b.acquired and b_key == "its own"
        print("  -> %s" % ("BUG: both coordinators' locks say acquired; etcd holds B's"
                           if bug else "A's lock no longer says acquired"))
        return bug
    finally:
        try:
            if lock_b.acquired:
                lock_b.release()
        finally:
            coord_b.stop()
            if child.poll() is None:
                os.kill(child.pid, signal.SIGCONT)
                child.wait(timeout=30)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--etcd", default="127.0.0.1:2379", help="HOST:PORT of etcd's client port")
    p.add_argument("--ttl", type=int, default=2, help="lock_timeout and membership_timeout, s")
    p.add_argument("--pause", type=float, default=0,
                   help="how long A is stopped, s (default: 2 x ttl + 2)")
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--holder", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--lock", help=argparse.SUPPRESS)
    args = p.parse_args()
    if not args.pause:
        args.pause = 2 * args.ttl + 2
    patched = compat_etcd3gw()
    if args.holder:
        holder(args)
        return 0
    print("tooz %s, etcd3gw %s%s, python %s" % (
        version("tooz"), version("etcd3gw"),
        " (etcd3gw.client wrapped to take api_path)" if patched else "",
        sys.version.split()[0]))
    results = [trial(args, n) for n in range(1, args.trials + 1)]
    bugs = sum(1 for r in results if r)
    ran = sum(1 for r in results if r is not None)
    print("%d of %d trials: A's lock said acquired after B was granted the lock"
          % (bugs, ran))
    if ran == 0:
        return 2
    return 1 if bugs else 0


if __name__ == "__main__":
    sys.exit(main())
