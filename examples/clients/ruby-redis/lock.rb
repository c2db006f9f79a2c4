# redis-rb (Debian's ruby-redis 4.8.0) with the lock recipe of the Redis
# documentation, as a fencecheck client program.
#
# fencecheck starts this program in each worker container and talks to it
# over stdin/stdout, one JSON object a line (docs/client-protocol.md). The
# program implements the lock only: fencecheck reads and writes the run's
# resource itself, with the token this program returns.
#
# The recipe (the single-instance part of the Redis documentation's
# distributed-locks page): SET key random-value NX PX ttl to take the lock,
# retried until the acquire's deadline; release with a script that deletes
# the key only if it still holds this client's value. The lock is a lease
# without renewal: the time left is the TTL from when the winning SET was
# sent.
#
# Token (with --fencing token, which reaches the program in init): an INCR
# of a counter in the same script as the SET NX PX, so that every grant
# carries a number that grows. Unfenced, the grants carry none.
#
# It answers held (--recheck, the belief sampler) with the recipe's own
# deadline, as the Redis documentation's careful client would: held while
# the TTL from the winning SET has not passed. It asks the server nothing.
require 'json'
require 'securerandom'
require 'redis'

GRANT = <<~LUA
  if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return redis.call('incr', KEYS[2])
  end
  return false
LUA
RELEASE = <<~LUA
  if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
  end
  return 0
LUA

def error(kind, message)
  { 'type' => 'error', 'kind' => kind, 'message' => message }
end

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

class Client
  attr_reader :fenced

  def initialize(req)
    host, _, port = req['endpoints'][0].rpartition(':')
    rpc = req.fetch('rpc_timeout_ms', 5000) / 1000.0
    @ttl = req['ttl_ms']
    @fenced = req.fetch('fencing', 'none') != 'none'
    @key = req['prefix'] + '/client-lock'
    @token_key = req['prefix'] + '/client-token'
    @redis = Redis.new(host: host, port: port.to_i, timeout: rpc, reconnect_attempts: 0)
    @held = nil
  end

  def acquire(req)
    return error('fail', 'already holding the lock') if @held

    deadline = now + req['timeout_ms'] / 1000.0
    value = SecureRandom.hex(16)
    loop do
      sent = now
      begin
        got = if @fenced
                @redis.eval(GRANT, keys: [@key, @token_key], argv: [value, @ttl])
              else
                @redis.set(@key, value, nx: true, px: @ttl)
              end
      rescue Redis::BaseError => e
        # The SET may have been applied: we cannot vouch for it.
        return error('info', "acquire: #{e.class}: #{e.message}")
      end
      if got
        @held = { value: value, granted_at: sent }
        reply = { 'remaining_ms' => remaining }
        reply['token'] = got if @fenced
        return reply
      end
      return error('fail', "lock not acquired within #{req['timeout_ms']} ms") if now >= deadline

      sleep 0.05
    end
  end

  def remaining
    return 0 unless @held

    [0, (@ttl - (now - @held[:granted_at]) * 1000).floor].max
  end

  def release
    h = @held
    @held = nil
    return error('fail', 'no lock held') unless h

    begin
      n = @redis.eval(RELEASE, keys: [@key], argv: [h[:value]])
    rescue Redis::BaseError => e
      return error('info', "release: #{e.class}: #{e.message}")
    end
    return error('fail', 'release: the lock was no longer ours') unless n == 1

    {}
  end
end

$stdout.sync = true
client = nil
$stdin.each_line do |line|
  req = JSON.parse(line)
  kind = req['type']
  reply = begin
    case kind
    when 'init'
      client = Client.new(req)
      { 'implements' => %w[lock held], 'tokens' => client.fenced, 'name' => "redis-rb #{Redis::VERSION} SET NX PX lock" }
    else
      if client.nil? then error('fail', "#{kind} before init")
      elsif kind == 'acquire' then client.acquire(req)
      elsif kind == 'remaining' then { 'remaining_ms' => client.remaining }
      elsif kind == 'held' then { 'held' => client.remaining.positive? }
      elsif kind == 'release' then client.release
      else error('fail', "unknown request #{kind.inspect}")
      end
    end
  rescue Redis::BaseError => e
    error('fail', "#{kind}: #{e.class}: #{e.message}")
  end
  reply['type'] ||= "#{kind}_ok"
  reply['id'] = req['id']
  $stdout.write(JSON.generate(reply) + "\n")
end
