// The client's pure parts and its storages, without a server: ids, backoff, Retry-After,
// property rules, queue bounds, session recovery, and the file queue on a real temporary
// directory (real files; a dead process's log is made by a real child process that exited).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { equalJitter, fullJitter, parseRetryAfter } from '../src/core/retry.js';
import { uuidv7 } from '../src/core/uuid.js';
import { checkContextId, checkProperties, utf8Length } from '../src/core/validate.js';
import { DurableQueue } from '../src/core/queue.js';
import { Sessions } from '../src/core/session.js';
import { SDK_VERSION } from '../src/core/environment.js';
import { createClient, FileStorage, MemoryStorage, type QueuedRecord, type TallyIssue } from '../src/node.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'tally-unit-'));
  dirs.push(d);
  return d;
};
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const event = (id: string, extra: Record<string, unknown> = {}): QueuedRecord =>
  ({
    id,
    kind: 'event',
    body: { event_id: id, category: 'c', name: 'n', timestamp: '2026-01-01T00:00:00.000Z', actor_id: 'a', product: 'p', product_version: '1', ...extra },
  }) as QueuedRecord;

describe('ids, backoff and Retry-After', () => {
  it('UUIDv7: version and variant bits, the time in the first 48 bits, and strictly increasing within a millisecond', () => {
    const now = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const ids = Array.from({ length: 5000 }, () => uuidv7(now));
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual([...ids].sort(), ids);
    assert.ok(parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16) >= now);
  });

  it('full jitter stays within [0, min(max, base·2^attempt)]; equal jitter within its upper half', () => {
    for (let attempt = 0; attempt < 40; attempt++) {
      for (const r of [0, 0.5, 0.999999]) {
        const ceiling = Math.min(60_000, 1000 * 2 ** attempt);
        const d = fullJitter(attempt, 1000, 60_000, () => r);
        assert.ok(d >= 0 && d <= ceiling, `${attempt} ${r} ${d}`);
        const e = equalJitter(attempt, 1000, 60_000, () => r);
        assert.ok(e >= ceiling / 2 && e <= ceiling);
      }
    }
  });

  it('Retry-After in seconds or as an HTTP date, capped; unreadable is undefined', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('3', 60_000, now), 3000);
    assert.equal(parseRetryAfter('0', 60_000, now), 0);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:07 GMT', 60_000, now), 7000);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', 60_000, now), 0, 'a date in the past: now');
    assert.equal(parseRetryAfter('86400', 300_000, now), 300_000, 'capped');
    assert.equal(parseRetryAfter('soon', 60_000, now), undefined);
    assert.equal(parseRetryAfter(null, 60_000, now), undefined);
  });

  it('the SDK version sent in X-Environment-Data is the package version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    assert.equal(SDK_VERSION, pkg.version);
  });
});

describe('property rules', () => {
  it('refuses what the server would reject, and keeps the rest', () => {
    assert.equal(checkProperties({ license: 'x' }).reason, 'reserved_property_key');
    assert.equal(checkProperties({ a: { b: 1 } }).reason, 'invalid_event');
    assert.equal(checkProperties({ a: [1] }).reason, 'invalid_event');
    assert.equal(checkProperties({ a: null }).reason, 'invalid_event');
    assert.equal(checkProperties({ a: Number.NaN }).reason, 'invalid_event');
    assert.equal(checkProperties({ a: 2 ** 63 }).reason, 'invalid_event');
    assert.equal(checkProperties({ ['k'.repeat(65)]: 1 }).reason, 'invalid_event');
    assert.equal(checkProperties({ a: 'v'.repeat(257) }).reason, 'invalid_event');
    assert.equal(checkProperties({ a: '\ud800' }).reason, 'invalid_event');
    assert.equal(checkProperties(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, i]))).reason, 'invalid_event');
    assert.deepEqual(checkProperties({ a: '😀'.repeat(256), b: 1.5, c: false, d: undefined }).properties, { a: '😀'.repeat(256), b: 1.5, c: false });
    assert.equal(utf8Length('a€😀'), 1 + 3 + 4);
  });
});

describe('queue bounds', () => {
  it('drops the oldest records past the bound, counts them all, and reports without flooding', async () => {
    const issues: TallyIssue[] = [];
    const client = createClient({
      apiKey: 'k',
      endpoint: 'http://127.0.0.1:9',
      product: 'app',
      productVersion: '1',
      storage: 'memory',
      autoSession: false,
      maxQueueRecords: 10,
      flushAt: 1000,
      handleExit: false,
      logger: false,
      onError: (i) => issues.push(i),
    });
    const ids = Array.from({ length: 15 }, (_, i) => client.track('ui', 'x', { i })!);
    assert.equal(client.stats().queued, 10);
    assert.equal(client.stats().dropped, 5);
    assert.deepEqual(
      issues.map((i) => [i.code, i.count]),
      [['dropped', 1]],
      'reported at once, then at most every 10 s, so that an outage does not flood the log',
    );
    const result = await client.shutdown({ timeoutMs: 50 });
    assert.equal(result.remaining, 10);
    assert.equal(ids.length, 15, 'track() still returned an id for each: the drop is of the oldest');
  });

  it("never drops an open session's marker for space", () => {
    const q = new DurableQueue(new MemoryStorage(), { maxRecords: 2, maxBytes: 1e9 }, () => undefined);
    q.open(() => ({ put: [], remove: [] }));
    q.put({ id: '0', kind: 'session_open', body: { session_id: 's', actor_id: 'a', product: 'p', product_version: '1', started_at: 't', last_activity: 't' } });
    for (const id of ['1', '2', '3']) q.put(event(id));
    assert.deepEqual(
      [...q.records()].map((r) => r.id),
      ['0', '2', '3'],
    );
    assert.equal(q.dropped, 1);
  });

  it('counts an open session’s marker in neither queued records nor queued bytes (it is state, never sent)', () => {
    const q = new DurableQueue(new MemoryStorage(), { maxRecords: 10, maxBytes: 1e9 }, () => undefined);
    q.open(() => ({ put: [], remove: [] }));
    q.put({ id: '0', kind: 'session_open', body: { session_id: 's', actor_id: 'a', product: 'p', product_version: '1', started_at: 't', last_activity: 't' } });
    assert.deepEqual([q.size, q.bytes], [0, 0]);
    q.put(event('1'));
    assert.deepEqual([q.size, q.bytes], [1, q.bytesOf('1')]);
  });
});

describe('session recovery', () => {
  it('turns orphaned markers into sdk_recovery ends at the last sign of life, with the start context', () => {
    const storage = new MemoryStorage();
    const q = new DurableQueue(storage, { maxRecords: 100, maxBytes: 1e9 }, () => undefined);
    const sessions = new Sessions(
      q,
      storage,
      { product: 'p', productVersion: '1', timeoutMs: 0, persistEveryMs: 1000 },
      { actorId: () => 'a', accountId: () => undefined, licenseId: () => undefined },
    );
    const marker: QueuedRecord = {
      id: 'm1',
      kind: 'session_open',
      body: {
        session_id: 's1',
        actor_id: 'u',
        product: 'p',
        product_version: '0.9',
        started_at: '2026-01-01T00:00:00.000Z',
        last_activity: '2026-01-01T00:05:00.000Z',
        account_id: 'acct',
      },
    };
    const later = event('e1', { session_id: 's1', timestamp: '2026-01-01T00:05:03.000Z' });
    const { put, remove } = sessions.recover([marker, later], Date.now());
    assert.deepEqual(remove, ['m1']);
    assert.equal(put.length, 1);
    assert.deepEqual(put[0]!.body, {
      session_id: 's1',
      ended_at: '2026-01-01T00:05:03.000Z',
      end_reason: 'sdk_recovery',
      actor_id: 'u',
      product: 'p',
      product_version: '0.9',
      started_at: '2026-01-01T00:00:00.000Z',
      account_id: 'acct',
    });
  });
});

describe('the file queue', () => {
  it('replays puts and removes, skips a torn last line, and keeps state beside the log', () => {
    const dir = tempDir();
    const a = new FileStorage({ dir });
    assert.deepEqual(a.load(), []);
    a.put(event('1'));
    a.put(event('2'));
    a.put(event('3'));
    a.remove(['2']);
    a.setState('identity', '{"anonymous_id":"x"}');
    const [log] = readdirSync(dir).filter((f) => f.endsWith('.log'));
    appendFileSync(join(dir, log!), '+{"id":"4","kind":"ev'); // a write cut by a crash
    // A log whose process is gone is adopted by the next process: simulated by renaming it to a dead pid.
    const deadPid = Number(execFileSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']));
    writeFileSync(join(dir, `q-${deadPid}-zz.log`), readFileSync(join(dir, log!)));
    rmSync(join(dir, log!));
    const b = new FileStorage({ dir });
    assert.deepEqual(
      b.load().map((r) => r.id),
      ['1', '3'],
    );
    assert.equal(b.getState('identity'), '{"anonymous_id":"x"}');
    assert.ok(!existsSync(join(dir, `q-${deadPid}-zz.log`)), 'the adopted log is gone once copied');
    assert.equal(readdirSync(dir).filter((f) => f.endsWith('.log')).length, 1);
  });

  it('leaves alone the log of a process that is still running', () => {
    const dir = tempDir();
    writeFileSync(join(dir, `q-${process.ppid}-aa.log`), `+${JSON.stringify(event('x'))}\n`);
    const s = new FileStorage({ dir });
    assert.deepEqual(s.load(), []);
    assert.ok(existsSync(join(dir, `q-${process.ppid}-aa.log`)));
  });

  it('two queues open in one process on one directory keep to their own logs; an empty log goes at close', () => {
    const dir = tempDir();
    const a = new FileStorage({ dir });
    a.load();
    a.put(event('a1'));
    const b = new FileStorage({ dir });
    assert.deepEqual(b.load(), [], "b does not take a's live log");
    b.close();
    a.close();
    assert.equal(readdirSync(dir).filter((f) => f.endsWith('.log')).length, 1, 'a still holds a record; b had none');
    assert.deepEqual(
      new FileStorage({ dir }).load().map((r) => r.id),
      ['a1'],
    );
  });

  it('compacts by writing the live records to a new file renamed over the log', () => {
    const dir = tempDir();
    const s = new FileStorage({ dir, compactAfter: 50 });
    s.load();
    for (let i = 0; i < 200; i++) {
      s.put(event(`e${i}`));
      if (i % 2 === 1) s.remove([`e${i - 1}`]);
    }
    const [log] = readdirSync(dir).filter((f) => f.endsWith('.log'));
    const lines = readFileSync(join(dir, log!), 'utf8').trim().split('\n');
    assert.ok(lines.length < 200, `compacted: ${lines.length} lines`);
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.startsWith('tmp-')),
      [],
      'no temporary file left',
    );
    s.close();
    const again = new FileStorage({ dir });
    // Our own pid wrote it, but that FileStorage is closed: a new one adopts it like a previous life's.
    assert.deepEqual(
      again.load().map((r) => r.id),
      Array.from({ length: 100 }, (_, i) => `e${2 * i + 1}`),
    );
  });
});

describe('account and license ids as the server judges them', () => {
  it('refuses every control character (C0, DEL and C1: U+0085 too), blank ids and lone surrogates; keeps the rest', () => {
    for (const bad of ['acme\u0085corp', 'a\u009fb', 'a\u0007b', 'a\u007fb', '   ', 'a\ud800'])
      assert.ok(checkContextId('account_id', bad), JSON.stringify(bad));
    for (const good of ['acme', 'Ünïcødé 株式会社', 'a b', 'x'.repeat(256)]) assert.equal(checkContextId('account_id', good), undefined, good);
  });
});
