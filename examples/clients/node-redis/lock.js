// node-redis (Debian's node-redis 4.5.1) with the lock recipe of the Redis
// documentation, as a fencecheck client program.
//
// fencecheck starts this program in each worker container and talks to it
// over stdin/stdout, one JSON object a line (docs/client-protocol.md). The
// program implements the lock only: fencecheck reads and writes the run's
// resource itself, with the token this program returns.
//
// The recipe (https://redis.io/docs/manual/patterns/distributed-locks/, the
// single-instance part): SET key random-value NX PX ttl to take the lock,
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
'use strict';
const readline = require('readline');
const crypto = require('crypto');
const { createClient } = require('redis');

const GRANT = `
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
return false`;
const RELEASE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0`;

let client = null;
let cfg = null;
let held = null; // {value, grantedAt, token}

const error = (kind, message) => ({ type: 'error', kind, message });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function init(req) {
  const [host, port] = [req.endpoints[0].slice(0, req.endpoints[0].lastIndexOf(':')), Number(req.endpoints[0].slice(req.endpoints[0].lastIndexOf(':') + 1))];
  cfg = {
    ttl: req.ttl_ms,
    fenced: (req.fencing || 'none') !== 'none',
    key: req.prefix + '/client-lock',
    tokenKey: req.prefix + '/client-token',
  };
  client = createClient({ socket: { host, port, connectTimeout: req.rpc_timeout_ms, reconnectStrategy: () => 100 } });
  client.on('error', (e) => process.stderr.write(`node-redis: ${e}\n`));
  await client.connect();
  let version = 'unknown';
  try {
    version = require('redis/package.json').version;
  } catch (e) {
    // the version is only for the report
  }
  return { implements: ['lock', 'held'], tokens: cfg.fenced, name: `node-redis ${version} SET NX PX lock` };
}

async function acquire(req) {
  if (held) return error('fail', 'already holding the lock');
  const deadline = Date.now() + req.timeout_ms;
  const value = crypto.randomBytes(16).toString('hex');
  for (;;) {
    const sent = performance.now();
    let got;
    try {
      if (cfg.fenced) {
        got = await client.eval(GRANT, { keys: [cfg.key, cfg.tokenKey], arguments: [value, String(cfg.ttl)] });
      } else {
        got = await client.set(cfg.key, value, { NX: true, PX: cfg.ttl });
      }
    } catch (e) {
      // The SET may have been applied: we cannot vouch for it.
      return error('info', `acquire: ${e}`);
    }
    if (got !== null && got !== undefined) {
      held = { value, grantedAt: sent, token: cfg.fenced ? Number(got) : undefined };
      const reply = { remaining_ms: remaining() };
      if (cfg.fenced) reply.token = held.token;
      return reply;
    }
    if (Date.now() >= deadline) return error('fail', `lock not acquired within ${req.timeout_ms} ms`);
    await sleep(50);
  }
}

function remaining() {
  if (!held) return 0;
  return Math.max(0, Math.floor(cfg.ttl - (performance.now() - held.grantedAt)));
}

async function release() {
  const h = held;
  held = null;
  if (!h) return error('fail', 'no lock held');
  let n;
  try {
    n = await client.eval(RELEASE, { keys: [cfg.key], arguments: [h.value] });
  } catch (e) {
    return error('info', `release: ${e}`);
  }
  if (Number(n) !== 1) return error('fail', 'release: the lock was no longer ours');
  return {};
}

async function main() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    const req = JSON.parse(line);
    let reply;
    try {
      if (req.type === 'init') reply = await init(req);
      else if (!client) reply = error('fail', `${req.type} before init`);
      else if (req.type === 'acquire') reply = await acquire(req);
      else if (req.type === 'remaining') reply = { remaining_ms: remaining() };
      else if (req.type === 'held') reply = { held: remaining() > 0 };
      else if (req.type === 'release') reply = await release();
      else reply = error('fail', `unknown request ${JSON.stringify(req.type)}`);
    } catch (e) {
      reply = error('fail', `${req.type}: ${e}`);
    }
    if (!reply.type) reply.type = req.type + '_ok';
    reply.id = req.id;
    process.stdout.write(JSON.stringify(reply) + '\n');
  }
  process.exit(0);
}

main();
