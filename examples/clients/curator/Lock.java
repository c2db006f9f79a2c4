// Curator's InterProcessMutex as a fencecheck client program.
//
// fencecheck starts this program in each worker container and talks to it
// over stdin and stdout, one JSON object a line (docs/client-protocol.md).
// The program implements the lock only: fencecheck reads and writes the
// run's resource itself, with the token this program returns.
//
// With --fencing none (the run's fencing reaches the program in init) it is
// the recipe Curator's documentation gives, and nothing more: one
// CuratorFramework per process (session timeout = the run's TTL,
// ExponentialBackoffRetry), an InterProcessMutex on PREFIX/client-lock,
// acquire(timeout) and release(), and a ConnectionStateListener, because "if
// a SUSPENDED state is reported you cannot be certain that you still hold
// the lock unless you subsequently receive a RECONNECTED state" (a LOST
// state: the lock is gone). Its grants carry no token, and the time left
// (remaining) is the session timeout while no SUSPENDED or LOST was
// reported since the grant, else 0: the lock is held until Curator says
// otherwise. It answers held (--recheck, the belief sampler) the same way,
// asking the server nothing: isAcquiredInThisProcess(), and no SUSPENDED or
// LOST since the grant.
//
// With --fencing token it adds what fencing needs, and checks before each
// write as a careful client would:
//   - Token: the creation zxid (czxid) of the lock's znode, read after the
//     grant. zxids only grow (a new ZooKeeper leader raises the epoch in
//     their high bits), so every grant's token is higher than the last.
//   - Time left: 0 once the connection was SUSPENDED or LOST since the
//     grant; else the program asks the server whether its znode still
//     exists and is its session's, and the lease is the session timeout
//     from when that question was sent (the server cannot expire the
//     session sooner).
//
// A call that outlasts the run's RPC timeout is answered "info" and the
// program exits: InterProcessMutex belongs to the thread that acquired it,
// and a thread stuck in Curator's retries cannot be trusted with the next
// request. fencecheck starts a new process for the next operation.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

public final class Lock {
    static final ObjectMapper JSON = new ObjectMapper();

    /** InterProcessMutex, with the path of the znode a grant created. */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String nodePath() {
            return getLockPath();
        }
    }

    /** A request's failure: kind is "fail" (no effect) or "info" (unknown). */
    static final class Failure extends Exception {
        final String kind;

        Failure(String kind, String message) {
            super(message);
            this.kind = kind;
        }
    }

    CuratorFramework client;
    Mutex mutex;
    long ttlMs;
    long rpcMs;
    boolean fenced;
    boolean held;
    String nodePath;
    long token;
    // Bumped by the listener on SUSPENDED and LOST; a grant remembers it.
    volatile long interruptions;
    long interruptionsAtGrant;

    // One thread runs every call on the mutex: it is owned by a thread.
    final ExecutorService lockThread = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "lock");
        t.setDaemon(true);
        return t;
    });

    ObjectNode init(JsonNode r) throws Failure {
        ttlMs = r.path("ttl_ms").asLong(2000);
        fenced = !r.path("fencing").asText("none").equals("none");
        rpcMs = r.path("rpc_timeout_ms").asLong(5000);
        List<String> endpoints = new ArrayList<>();
        r.path("endpoints").forEach(e -> endpoints.add(e.asText()));
        if (endpoints.isEmpty()) {
            throw new Failure("fail", "init: no endpoints");
        }
        client = CuratorFrameworkFactory.builder()
                .connectString(String.join(",", endpoints))
                .sessionTimeoutMs((int) ttlMs)
                .connectionTimeoutMs((int) Math.min(rpcMs, 15000))
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                .build();
        client.getConnectionStateListenable().addListener((c, state) -> {
            if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
                interruptions++;
            }
            System.err.println("curator: connection " + state);
        });
        client.start();
        try {
            if (!client.blockUntilConnected((int) rpcMs, TimeUnit.MILLISECONDS)) {
                throw new Failure("fail", "init: not connected to " + endpoints + " within " + rpcMs + " ms");
            }
        } catch (InterruptedException e) {
            throw new Failure("fail", "init: interrupted");
        }
        mutex = new Mutex(client, r.path("prefix").asText() + "/client-lock");
        ObjectNode o = JSON.createObjectNode();
        o.putArray("implements").add("lock").add("held");
        o.put("tokens", fenced);
        o.put("name", "Curator " + curatorVersion() + " InterProcessMutex");
        return o;
    }

    /**
     * Curator's version: its jar manifest's, else the name of the versioned
     * link Debian installs beside the jar (curator-recipes-5.4.0.jar).
     */
    static String curatorVersion() {
        String v = InterProcessMutex.class.getPackage().getImplementationVersion();
        if (v != null) {
            return v;
        }
        java.io.File jar = new java.io.File(InterProcessMutex.class.getProtectionDomain().getCodeSource().getLocation().getPath());
        String[] names = jar.getParentFile().list();
        for (String n : names != null ? names : new String[0]) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("curator-recipes-([0-9][0-9.]*)\\.jar").matcher(n);
            if (m.matches()) {
                return m.group(1);
            }
        }
        return "(version unknown)";
    }

    /** Runs a call on the lock thread, waiting at most ms. */
    <T> T onLockThread(Callable<T> call, long ms, String what) throws Failure {
        Future<T> f = lockThread.submit(call);
        try {
            return f.get(ms, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            stuck(what + ": no answer within " + ms + " ms");
            return null;
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof Failure) {
                throw (Failure) c;
            }
            throw new Failure("info", what + ": " + c);
        } catch (InterruptedException e) {
            throw new Failure("info", what + ": interrupted");
        }
    }

    /** Answers info and exits: the lock thread is stuck in Curator. */
    void stuck(String message) throws Failure {
        throw new Failure("info-exit", message);
    }

    /**
     * The time left. Unfenced: the session timeout while Curator reported no
     * SUSPENDED or LOST since the grant, else 0. Fenced: 0 after such a
     * report, or if the znode is gone or another session's; else the
     * session timeout from when the question was sent to the server.
     */
    long leaseLeft() throws Exception {
        if (interruptions != interruptionsAtGrant) {
            return 0;
        }
        if (!fenced) {
            return ttlMs;
        }
        long sent = System.nanoTime();
        Stat st = client.checkExists().forPath(nodePath);
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        if (st == null || st.getEphemeralOwner() != session || interruptions != interruptionsAtGrant) {
            return 0;
        }
        long left = ttlMs - (System.nanoTime() - sent) / 1_000_000;
        return Math.max(0, left);
    }

    ObjectNode acquire(JsonNode r) throws Failure {
        if (held) {
            throw new Failure("fail", "already holding the lock");
        }
        long timeout = r.path("timeout_ms").asLong(10000);
        long[] tokenAndLeft = onLockThread(() -> {
            long before = interruptions;
            boolean ok;
            try {
                ok = mutex.acquire(timeout, TimeUnit.MILLISECONDS);
            } catch (Exception e) {
                // acquire deletes its znode when it gives up; an exception
                // may have left one whose answer was lost.
                throw new Failure("info", "acquire: " + e);
            }
            if (!ok) {
                throw new Failure("fail", "lock not acquired within " + timeout + " ms");
            }
            interruptionsAtGrant = before;
            held = true;
            if (!fenced) {
                return new long[] {0, leaseLeft()};
            }
            nodePath = mutex.nodePath();
            Stat st;
            try {
                st = client.checkExists().forPath(nodePath);
            } catch (Exception e) {
                st = null;
            }
            if (st == null) {
                // Granted, but the znode cannot be read: no token to give.
                held = false;
                try {
                    mutex.release();
                } catch (Exception ignored) {
                    // the session's end removes it
                }
                throw new Failure("info", "acquired, but the lock znode " + nodePath + " could not be read");
            }
            token = st.getCzxid();
            return new long[] {token, leaseLeft()};
        }, timeout + rpcMs, "acquire");
        ObjectNode o = JSON.createObjectNode();
        if (fenced) {
            o.put("token", tokenAndLeft[0]);
        }
        o.put("remaining_ms", tokenAndLeft[1]);
        return o;
    }

    ObjectNode remaining() throws Failure {
        long left = 0;
        if (held) {
            left = onLockThread(() -> {
                try {
                    return leaseLeft();
                } catch (Exception e) {
                    return 0L;
                }
            }, rpcMs, "remaining");
        }
        ObjectNode o = JSON.createObjectNode();
        o.put("remaining_ms", left);
        return o;
    }

    ObjectNode believes() {
        ObjectNode o = JSON.createObjectNode();
        o.put("held", held && mutex.isAcquiredInThisProcess() && interruptions == interruptionsAtGrant);
        return o;
    }

    ObjectNode release() throws Failure {
        if (!held) {
            throw new Failure("fail", "no lock held");
        }
        held = false;
        onLockThread(() -> {
            try {
                mutex.release();
            } catch (Exception e) {
                throw new Failure("info", "release: " + e);
            }
            return null;
        }, rpcMs, "release");
        return JSON.createObjectNode();
    }

    public static void main(String[] args) throws Exception {
        Lock l = new Lock();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        // Replies alone go to stdout: anything a library prints goes to
        // stderr, with the logs.
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        for (String line; (line = in.readLine()) != null; ) {
            JsonNode r;
            try {
                r = JSON.readTree(line);
            } catch (Exception e) {
                System.err.println("curator: bad request " + line + ": " + e);
                System.exit(2);
                return;
            }
            String type = r.path("type").asText();
            ObjectNode rep;
            boolean exit = false;
            try {
                if (type.equals("init")) {
                    rep = l.init(r);
                } else if (l.client == null) {
                    throw new Failure("fail", type + " before init");
                } else if (type.equals("acquire")) {
                    rep = l.acquire(r);
                } else if (type.equals("remaining")) {
                    rep = l.remaining();
                } else if (type.equals("held")) {
                    rep = l.believes();
                } else if (type.equals("release")) {
                    rep = l.release();
                } else {
                    throw new Failure("fail", "unknown request \"" + type + "\"");
                }
                rep.put("type", type + "_ok");
            } catch (Failure f) {
                rep = JSON.createObjectNode();
                rep.put("type", "error");
                exit = f.kind.equals("info-exit");
                rep.put("kind", exit ? "info" : f.kind);
                rep.put("message", f.getMessage());
            }
            rep.put("id", r.path("id").asLong());
            out.println(JSON.writeValueAsString(rep));
            out.flush();
            if (exit) {
                System.err.println("curator: exiting: " + rep.path("message").asText());
                System.exit(3);
            }
        }
    }
}
