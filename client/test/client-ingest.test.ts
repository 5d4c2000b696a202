// The client against the real Tally server on a real socket (embedded store, or PostgreSQL at
// TEST_DATABASE_URL): events, sessions, exceptions, identify and the environment land. Nothing is
// faked; the queue is in memory here (the file queue has its own tests).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, type TallyIssue, type TallyOptions } from '../src/node.js';
import { recordingFetch, rows, sessions, startServer, storedEventIds, tenant, waitFor, type RunningServer } from './helpers/server.js';

let server: RunningServer;
before(async () => (server = await startServer()));
after(async () => server.close());

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

describe('client: records land in the server', () => {
  it('tracks events in batches, with session, account and license, and stores each once', async () => {
    const tn = await tenant(server);
    const rec = recordingFetch();
    const client = createClient(options(tn.ingestKey, { fetch: rec.fetch, flushAt: 20 }));
    client.setAccount('acct-1');
    client.setLicense('lic-1');
    const ids = Array.from({ length: 45 }, (_, i) => client.track('ui', 'click', { i, label: `button ${i}`, ok: true })!);
    assert.ok(
      ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)),
      'UUIDv7 event ids',
    );
    assert.deepEqual([...ids].sort(), ids, 'ids sort in the order they were made');
    const result = await client.flush();
    assert.deepEqual(result, { delivered: true, remaining: 0 });
    assert.deepEqual((await storedEventIds(server.t.db, tn.id)).sort(), [...ids].sort());
    const [row] = await rows<{ session_id: string; account_id: string; license_id: string; properties: Record<string, unknown> }>(
      server.t.db,
      'SELECT session_id, account_id, license_id, properties FROM events WHERE tenant_id = $1 AND event_id = $2',
      [tn.id, ids[3]],
    );
    assert.equal(row!.session_id, client.sessionId);
    assert.equal(row!.account_id, 'acct-1');
    assert.equal(row!.license_id, 'lic-1');
    assert.deepEqual(row!.properties, { i: 3, label: 'button 3', ok: true });
    const batches = rec.log.filter((r) => r.path === '/v1/events');
    assert.equal(batches.length, 1, 'one loop of track() calls makes one batch');
    assert.equal(batches[0]!.env, true, 'X-Environment-Data rides on the first batch');
    await client.shutdown();
  });

  it('sends X-Environment-Data once per process, and the server keeps it', async () => {
    const tn = await tenant(server);
    const rec = recordingFetch();
    const client = createClient(options(tn.ingestKey, { fetch: rec.fetch, flushAt: 1 }));
    client.track('ui', 'a');
    await client.flush();
    client.track('ui', 'b');
    await client.flush();
    assert.deepEqual(
      rec.log.filter((r) => r.path === '/v1/events').map((r) => r.env),
      [true, false],
    );
    const [env] = await rows<{ data: Record<string, unknown> }>(server.t.db, 'SELECT data FROM environments WHERE tenant_id = $1 AND actor_id = $2', [
      tn.id,
      client.actorId,
    ]);
    assert.equal(env!.data.sdk, '@tally/client');
    assert.equal(env!.data.runtime_name, 'node');
    assert.equal(env!.data.app_version, '1.0.0');
    assert.equal(typeof env!.data.os, 'string');
    assert.equal(typeof env!.data.locale, 'string');
    await client.shutdown();
  });

  it('starts a session at init with the account and license of that moment, and ends it normally at shutdown', async () => {
    const tn = await tenant(server);
    const client = createClient(options(tn.ingestKey, { autoSession: false }));
    client.setAccount('acct-before');
    const first = client.startSession({ plan: 'pro' });
    client.setAccount('acct-after'); // SPEC.md: does not change the session already started
    client.track('ui', 'open');
    const second = client.startSession();
    client.endSession();
    await client.shutdown();
    const stored = await sessions(server.t.db, tn.id);
    assert.deepEqual(
      stored.map((s) => [s.session_id, s.account_id, s.end_reason]),
      [
        [first, 'acct-before', 'normal'],
        [second, 'acct-after', 'normal'],
      ],
    );
    assert.ok(stored.every((s) => s.ended_at && s.ended_at >= s.started_at));
  });

  it('captures exceptions with breadcrumbs of the recent calls, session and environment', async () => {
    const tn = await tenant(server);
    const client = createClient(options(tn.ingestKey, { maxBreadcrumbs: 3 }));
    for (const name of ['a', 'b', 'c', 'd']) client.track('nav', name);
    client.addBreadcrumb('opened settings', { tab: 'billing' });
    const err = new RangeError('index 42 out of range');
    const id = client.captureException(err, { severity: 'fatal' });
    client.captureException('a plain string was thrown');
    await client.flush();
    const [x] = await rows<{
      exception_type: string;
      severity: string;
      message: string;
      stack_trace: string;
      breadcrumbs: { type: string; message: string }[];
      session_id: string;
      environment_context: Record<string, unknown>;
    }>(
      server.t.db,
      'SELECT exception_type, severity, message, stack_trace, breadcrumbs, session_id, environment_context FROM exceptions WHERE tenant_id = $1 AND exception_id = $2',
      [tn.id, id],
    );
    assert.equal(x!.exception_type, 'RangeError');
    assert.equal(x!.severity, 'fatal');
    assert.equal(x!.message, 'index 42 out of range');
    assert.match(x!.stack_trace, /RangeError: index 42 out of range\n\s+at /);
    assert.deepEqual(
      x!.breadcrumbs.map((b) => b.message),
      ['nav/c', 'nav/d', 'opened settings'],
      'the ring keeps the last N calls',
    );
    assert.equal(x!.session_id, client.sessionId);
    assert.equal(x!.environment_context.sdk, '@tally/client');
    const all = await rows<{ exception_type: string; severity: string; message: string }>(
      server.t.db,
      'SELECT exception_type, severity, message FROM exceptions WHERE tenant_id = $1 ORDER BY occurred_at',
      [tn.id],
    );
    assert.deepEqual(all[1], { exception_type: 'Error', severity: 'non_fatal', message: 'a plain string was thrown' });
    await client.shutdown();
  });

  it('identify links the anonymous id to the user once, and later events carry the user id', async () => {
    const tn = await tenant(server);
    const client = createClient(options(tn.ingestKey));
    const anonymous = client.actorId;
    client.track('ui', 'before');
    client.identify('user-42');
    client.identify('user-42'); // again: nothing more is sent
    const after = client.track('ui', 'after');
    await client.flush();
    const links = await rows<{ anonymous_actor_id: string; identified_actor_id: string; product_version: string }>(
      server.t.db,
      'SELECT anonymous_actor_id, identified_actor_id, product_version FROM actor_links WHERE tenant_id = $1',
      [tn.id],
    );
    assert.deepEqual(links, [{ anonymous_actor_id: anonymous, identified_actor_id: 'user-42', product_version: '1.0.0' }]);
    const [row] = await rows<{ actor_id: string }>(server.t.db, 'SELECT actor_id FROM events WHERE tenant_id = $1 AND event_id = $2', [tn.id, after]);
    assert.equal(row!.actor_id, 'user-42');
    client.reset();
    assert.notEqual(client.actorId, anonymous, 'reset() makes a new anonymous id');
    await client.shutdown();
  });

  it('refuses locally, with a warning, events over 4 KB or with reserved keys or nested properties', async () => {
    const tn = await tenant(server);
    const issues: TallyIssue[] = [];
    const client = createClient(options(tn.ingestKey, { onError: (i) => issues.push(i) }));
    assert.equal(client.track('ui', 'big', Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'x'.repeat(250)]))), undefined);
    assert.equal(client.track('ui', 'reserved', { accountId: 'a' }), undefined);
    assert.equal(client.track('ui', 'nested', { a: { b: 1 } as never }), undefined);
    assert.equal(client.track('ui', 'nul', { a: 'x\u0000y' }), undefined);
    assert.equal(client.track('', 'empty'), undefined);
    assert.deepEqual(
      issues.map((i) => [i.code, i.reason]),
      [
        ['refused', 'event_too_large'],
        ['refused', 'reserved_property_key'],
        ['refused', 'invalid_event'],
        ['refused', 'invalid_event'],
        ['refused', 'invalid_event'],
      ],
    );
    assert.ok(client.track('ui', 'fine', { note: undefined, n: 1 }), 'undefined values are left out, as JSON does');
    await client.flush();
    assert.equal(client.stats().refused, 5);
    assert.equal((await storedEventIds(server.t.db, tn.id)).length, 1);
    await client.shutdown();
  });

  it('flushes on its own at the interval', async () => {
    const tn = await tenant(server);
    const client = createClient(options(tn.ingestKey, { flushAt: 1000, flushIntervalMs: 300, autoSession: false }));
    await new Promise((r) => setTimeout(r, 50)); // the start-up flush is over: only the interval can send what follows
    const id = client.track('ui', 'timer');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(client.stats().queued, 1, 'below flushAt, nothing is sent at once');
    await waitFor('the interval flush', async () => (await storedEventIds(server.t.db, tn.id)).includes(id!), 5000);
    await client.shutdown();
  });
});
