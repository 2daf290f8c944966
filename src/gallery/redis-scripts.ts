// The fleet store's compare-and-set steps, as Lua scripts Redis runs atomically (redis-store.ts): each checks that
// a sample is still where the server read it, writes, and publishes its change, in one step, so that two servers
// changing the same sample at once cannot both succeed.

/**
 * A move, compare-and-set: sample ARGV[1] is given to its new subject only if its subject (KEYS[2]) and record
 * (KEYS[1]) are still what was read (ARGV[3], ARGV[2]); then the new record and subject are written and the change
 * is published, all in one atomic step. 0: changed meanwhile, nothing written or published.
 */
export const MOVE_SCRIPT = `
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[3] then return 0 end
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1`;

/**
 * A removal, compare-and-set: of the sample ids ARGV[5..], those whose subject (KEYS[3]) is still ARGV[1] are
 * deleted (record KEYS[1], crop KEYS[2], subject), and only those are published on channel ARGV[2], as the message
 * ARGV[3] .. ids .. ARGV[4] (the ids are the decimal strings passed in, so no number goes through Lua's floats).
 * Answers the ids removed, as strings: a sample moved or removed meanwhile is left alone and not answered, so a
 * removal is acknowledged once.
 */
export const REMOVE_SCRIPT = `
local removed = {}
for i = 5, #ARGV do
  if redis.call('HGET', KEYS[3], ARGV[i]) == ARGV[1] then
    redis.call('HDEL', KEYS[1], ARGV[i])
    redis.call('HDEL', KEYS[2], ARGV[i])
    redis.call('HDEL', KEYS[3], ARGV[i])
    removed[#removed + 1] = ARGV[i]
  end
end
if #removed > 0 then redis.call('PUBLISH', ARGV[2], ARGV[3] .. table.concat(removed, ',') .. ARGV[4]) end
return removed`;

/**
 * Measured qualities written back, compare-and-set: ARGV holds triples (sample id, the SHA-1 of its record as it was
 * read, the record with its quality); a record still as it was read is replaced, one changed, moved or removed
 * meanwhile is left as it is (its quality is measured again when next listed). Nothing is published: no server's
 * index holds qualities. Answers how many were written.
 */
export const QUALITY_SCRIPT = `
local written = 0
for i = 1, #ARGV, 3 do
  local now = redis.call('HGET', KEYS[1], ARGV[i])
  if now and redis.sha1hex(now) == ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
    written = written + 1
  end
end
return written`;
