// How the client acts on the server's answers 429, 402, 413, 207, 422 and 401, against the real
// Tally server on a real socket. Real: HTTP, the app, its store, its billing and its 429 path.
// Set by hand: plan configuration (mergePlans, small numbers), and for 429 a rate limiter with
// 3-second windows instead of one-minute ones (the server's RateLimiter interface) so the test
// does not wait a minute. The fetch is the real one, wrapped to record what went over the wire.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mergePlans } from '../../src/domain/plans.js';
import type { RateLimiter } from '../../src/http/plugins/rate-limit.js';
import { createClient, FileStorage, type TallyIssue, type TallyOptions } from '../src/node.js';
import { ADMIN_TOKEN, recordingFetch, sessions, startServer, storedEventIds, tenant, waitFor, type RunningServer } from './helpers/server.js';

/** Fixed windows like the server's own limiter, only shorter. */
function shortWindowLimiter(windowMs: number): RateLimiter {
  const windows = new Map<string, { start: number; used: number }>();
  return {
    async hit(key, limit) {
      const now = Date.now();
      let w = windows.get(key);
      if (!w || now - w.start >= windowMs) windows.set(key, (w = { start: now, used: 0 }));
      if (++w.used <= limit) return { allowed: true, retryAfterSeconds: 0 };
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((w.start + windowMs - now) / 1000)) };
    },
    async close() {},
  };
}

let server: RunningServer;
const dirs: string[] = [];
before(async () => {
  server = await startServer({
    plans: mergePlans({ trial: { requests_per_minute: 2 }, starter: { monthly_events: 3 } }),
    limiter: shortWindowLimiter(3000),
    env: { QUOTA_GRACE_HOURS: '0' },
  });
});
after(async () => {
  await server.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function options(apiKey: string, extra: Partial<TallyOptions> = {}): TallyOptions {
  return {
    apiKey,
    endpoint: server.url,
    product: 'app',
    productVersion: '1.0.0',
    storage: 'memory',
    handleExit: false,
    captureUncaught: false,
    logger: false,
    ...extra,
  };
}

const inject = (method: 'PUT' | 'PATCH', url: string, key: string, payload: object) =>
  server.t.app.inject({ method, url, headers: { authorization: `Bearer ${key}` }, payload });

describe('client: the server says no', () => {
  it('429: waits Retry-After before sending events again, and delivers every event once', async () => {
    const tn = await tenant(server, 'trial');
    const rec = recordingFetch();
    const client = createClient(options(tn.ingestKey, { fetch: rec.fetch, flushAt: 5, maxBatchEvents: 5, autoSession: false }));
    const ids = Array.from({ length: 20 }, (_, i) => client.track('ui', 'click', { i })!);
    await waitFor('all 20 events stored and answered', async () => (await storedEventIds(server.t.db, tn.id)).length === 20 && rec.inFlight() === 0, 20_000);
    const batches = rec.log.filter((r) => r.path === '/v1/events');
    const limited = batches.findIndex((r) => r.status === 429);
    assert.ok(limited > 0, `a 429 came: ${JSON.stringify(batches.map((b) => b.status))}`);
    const next = batches[limited + 1]!;
    assert.ok(next.at - batches[limited]!.at >= 900, `waited ${next.at - batches[limited]!.at} ms after the 429 (Retry-After ≥ 1 s)`);
    assert.equal(next.status, 200, 'the retry after Retry-After is accepted');
    assert.equal(
      batches.filter((b) => b.status === 200).reduce((n, b) => n + b.events!, 0),
      20,
      'accepted events were never sent again',
    );
    assert.deepEqual((await storedEventIds(server.t.db, tn.id)).sort(), ids.sort());
    await client.shutdown();
  });

  it('402: parks the queue on storage, probes one event at a time with backoff, and delivers all after an upgrade', async () => {
    const tn = await tenant(server, 'starter');
    const dir = mkdtempSync(join(tmpdir(), 'tally-402-'));
    dirs.push(dir);
    const rec = recordingFetch();
    const issues: TallyIssue[] = [];
    const opts = (): TallyOptions =>
      options(tn.ingestKey, {
        storage: new FileStorage({ dir }),
        fetch: rec.fetch,
        flushAt: 1,
        billingProbe: { baseDelayMs: 400, maxDelayMs: 800 },
        onError: (i) => issues.push(i),
      });
    const first = createClient(opts());
    const ids = [0, 1, 2].map((i) => first.track('ui', 'paid', { i })!);
    await first.flush();
    assert.equal((await storedEventIds(server.t.db, tn.id)).length, 3, 'the allotment of 3 is used up');
    for (let i = 3; i < 8; i++) ids.push(first.track('ui', 'blocked', { i })!);
    await first.flush();
    assert.equal(first.stats().parked, true);
    assert.deepEqual(
      issues.filter((i) => i.code === 'billing_blocked').map((i) => i.reason),
      ['quota_exhausted'],
    );
    const parked = await first.shutdown({ timeoutMs: 300 });
    assert.equal(parked.delivered, false, 'nothing was dropped; the queue stays on disk');

    // A new process with the same queue directory: still blocked, still probing slowly.
    const since = rec.log.length;
    const second = createClient(opts());
    await new Promise((r) => setTimeout(r, 1500));
    const probes = rec.log.slice(since).filter((r) => r.status === 402);
    assert.ok(probes.length >= 1 && probes.length <= 5, `probes in 1.5 s: ${probes.length}`);
    assert.ok(
      probes.every((p) => p.events === undefined || p.events === 1),
      'a probe carries one event',
    );
    assert.equal((await storedEventIds(server.t.db, tn.id)).length, 3);

    const upgraded = await server.t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/tenants/${tn.id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { plan: 'pro' },
    });
    assert.equal(upgraded.statusCode, 200, upgraded.body);
    await waitFor('the parked events', async () => (await storedEventIds(server.t.db, tn.id)).length === 8, 10_000);
    assert.deepEqual((await storedEventIds(server.t.db, tn.id)).sort(), ids.sort());
    await waitFor('the queue to drain', () => second.stats().queued === 0);
    assert.equal(second.stats().parked, false);
    await second.shutdown();
    const ended = await sessions(server.t.db, tn.id);
    assert.equal(ended.length, 2);
    assert.ok(
      ended.every((s) => s.end_reason === 'normal'),
      "the first process's session end waited on disk too",
    );
  });

  it('413: halves the batch until the server takes it, and sends each event once', async () => {
    const tn = await tenant(server);
    const rec = recordingFetch();
    // A client told the server takes 4 MiB: the real server's 1 MiB limit answers 413.
    const client = createClient(
      options(tn.ingestKey, { fetch: rec.fetch, flushAt: 10_000, maxBatchBytes: 4 * 1024 * 1024, maxQueueBytes: 16 * 1024 * 1024, autoSession: false }),
    );
    const props = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`p${i}`, 'x'.repeat(250)]));
    const ids = Array.from({ length: 1000 }, () => client.track('bulk', 'row', props)!);
    const result = await client.flush();
    assert.deepEqual(result, { delivered: true, remaining: 0 });
    const statuses = rec.log.filter((r) => r.path === '/v1/events').map((r) => [r.status, r.events]);
    assert.deepEqual(statuses.slice(0, 3), [
      [413, 1000],
      [413, 500],
      [200, 250],
    ]);
    assert.equal(
      statuses.filter(([s]) => s === 200).reduce((n, [, e]) => n + (e as number), 0),
      1000,
    );
    assert.deepEqual((await storedEventIds(server.t.db, tn.id)).sort(), ids.sort());
    await client.shutdown();
  });

  it('207: drops the rejected events, keeps the accepted, and resends neither', async () => {
    const tn = await tenant(server);
    const allow = await inject('PUT', '/v1/products/app/allowlist', tn.adminKey, { enabled: true, rules: [{ category: 'ui', name: '*' }] });
    assert.equal(allow.statusCode, 200, allow.body);
    const rec = recordingFetch();
    const issues: TallyIssue[] = [];
    const client = createClient(options(tn.ingestKey, { fetch: rec.fetch, autoSession: false, onError: (i) => issues.push(i) }));
    const good = ['a', 'b', 'c'].map((n) => client.track('ui', n)!);
    client.track('debug', 'x');
    client.track('debug', 'y');
    assert.deepEqual(await client.flush(), { delivered: true, remaining: 0 });
    await client.flush();
    assert.deepEqual(
      rec.log.map((r) => [r.path, r.status]),
      [['/v1/events', 207]],
      'one request, never resent',
    );
    assert.deepEqual((await storedEventIds(server.t.db, tn.id)).sort(), good.sort());
    assert.deepEqual(
      issues.map((i) => [i.code, i.reason, i.count]),
      [['rejected', 'ALLOWLIST_REJECTED', 2]],
    );
    assert.equal(client.stats().rejected, 2);
    assert.equal(client.stats().accepted, 3);
    await client.shutdown();
  });

  it('UNREGISTERED_VERSION and 422 are terminal: dropped, reported, never retried', async () => {
    const tn = await tenant(server);
    const strict = await inject('PATCH', '/v1/products/app', tn.adminKey, { strict_versions_enabled: true });
    assert.equal(strict.statusCode, 200, strict.body);
    const rec = recordingFetch();
    const issues: TallyIssue[] = [];
    const client = createClient(options(tn.ingestKey, { productVersion: '9.9.9', fetch: rec.fetch, onError: (i) => issues.push(i) }));
    client.track('ui', 'a');
    client.captureException(new Error('boom'));
    assert.deepEqual(await client.flush(), { delivered: true, remaining: 0 });
    await new Promise((r) => setTimeout(r, 300));
    await client.flush();
    assert.deepEqual(
      rec.log.map((r) => [r.path, r.status]),
      [
        ['/v1/events/sessions', 422],
        ['/v1/events', 207],
        ['/v1/events/exceptions', 422],
      ],
    );
    assert.deepEqual(
      issues.map((i) => [i.code, i.reason]),
      [
        ['rejected', 'UNREGISTERED_VERSION'],
        ['rejected', 'UNREGISTERED_VERSION'],
        ['rejected', 'UNREGISTERED_VERSION'],
      ],
    );
    await client.shutdown({ timeoutMs: 500 });
  });

  it('503 (the server sheds load): backs off for at least its Retry-After, then delivers', async () => {
    // A second server whose overload guard trips at 50 ms of event-loop delay sustained for 300 ms;
    // this process's loop (which is the server's too) is then blocked in slices, so the real guard
    // answers 503.
    const busy = await startServer({ env: { MAX_EVENT_LOOP_DELAY_MS: '50', OVERLOAD_SUSTAIN_MS: '300' } });
    try {
      let tn: Awaited<ReturnType<typeof tenant>> | undefined;
      await waitFor('the guard to calm down after start-up', async () => (tn = await tenant(busy).catch(() => undefined)) !== undefined);
      const rec = recordingFetch();
      const client = createClient(
        options(tn!.ingestKey, { endpoint: busy.url, fetch: rec.fetch, autoSession: false, flushAt: 1, retry: { baseDelayMs: 10, maxDelayMs: 50 } }),
      );
      // Saturate the loop in 200 ms slices; the event is tracked once the guard has certainly
      // seen the delay last past its 300 ms, and the loop stays saturated until the request
      // carrying it is answered, so its request meets the guard however long it takes to arrive.
      let id = '';
      const started = Date.now();
      while (rec.log.length === 0 && Date.now() - started < 15_000) {
        const slice = Date.now();
        while (Date.now() - slice < 200); // busy: the loop is saturated
        if (!id && Date.now() - started > 1300) id = client.track('ui', 'under pressure')!;
        await new Promise((r) => setImmediate(r));
      }
      await waitFor('the event stored and answered', async () => (await storedEventIds(busy.t.db, tn!.id)).includes(id) && rec.inFlight() === 0, 20_000);
      const shed = rec.log.findIndex((r) => r.status === 503);
      assert.ok(shed >= 0, `a 503 came: ${JSON.stringify(rec.log.map((r) => r.status))}`);
      const waited = rec.log[shed + 1]!.at - rec.log[shed]!.at;
      assert.ok(waited >= 1900, `Retry-After: 2 is a floor under the 10-50 ms backoff; waited ${waited} ms`);
      await client.shutdown();
    } finally {
      await busy.close();
    }
  });

  it('401: pauses sending, reports once, and keeps the queue for the next start', async () => {
    const tn = await tenant(server);
    const rec = recordingFetch();
    const issues: TallyIssue[] = [];
    const client = createClient(options('tk_live_revoked-or-mistyped', { fetch: rec.fetch, autoSession: false, flushAt: 1, onError: (i) => issues.push(i) }));
    client.track('ui', 'a');
    await client.flush();
    client.track('ui', 'b');
    await client.flush();
    assert.equal(rec.log.length, 1, 'nothing more is sent while paused');
    assert.equal(client.stats().paused, 'unauthorized');
    assert.equal(client.stats().queued, 2);
    assert.deepEqual(
      issues.map((i) => [i.code, i.status]),
      [['unauthorized', 401]],
    );
    const after = await client.shutdown({ timeoutMs: 200 });
    assert.deepEqual(after, { delivered: false, remaining: 2 }, 'kept for the next start');
    assert.equal((await storedEventIds(server.t.db, tn.id)).length, 0);
  });
});
