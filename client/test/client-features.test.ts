// The client's second-round features in Node against the real Tally server on a real socket (embedded store, or PostgreSQL at TEST_DATABASE_URL); real files for the persisted opt-out; nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rollupJob } from '../../src/jobs/rollups.js';
import { startJobs } from '../../src/jobs/runner.js';
import { createClient, MemoryStorage, type NodeOptions, type QueueStorage, type TallyIssue, type WireEvent } from '../src/node.js';
import { recordingFetch, rows, sessions, startServer, storedEventIds, tenant, type RunningServer } from './helpers/server.js';

let server: RunningServer;
const dirs: string[] = [];
before(async () => (server = await startServer()));
after(async () => {
  await server.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'tally-features-'));
  dirs.push(d);
  return d;
};

function options(apiKey: string, extra: Partial<NodeOptions> = {}): NodeOptions {
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

interface EventRow {
  event_id: string;
  actor_id: string;
  account_id: string | null;
  license_id: string | null;
  session_id: string | null;
  name: string;
  timestamp: Date;
  properties: Record<string, unknown> | null;
}

async function events(tenantId: string): Promise<EventRow[]> {
  return rows<EventRow>(
    server.t.db,
    'SELECT event_id::text AS event_id, actor_id, account_id, license_id, session_id::text AS session_id, name, occurred_at AS timestamp, properties FROM events WHERE tenant_id = $1 ORDER BY event_id',
    [tenantId],
  );
}

async function accountActors(adminKey: string, account: string): Promise<{ actor_id: string; traits: Record<string, unknown> | null }[]> {
  const jobs = startJobs(server.t.db, [rollupJob(60)], { warn() {}, info() {}, error() {} } as never);
  assert.equal(await jobs.runOnce('rollups'), true);
  await jobs.stop();
  const res = await fetch(`${server.url}/v1/accounts/${account}/actors`, { headers: { authorization: `Bearer ${adminKey}` } });
  assert.equal(res.status, 200);
  return ((await res.json()) as { data: { actor_id: string; traits: Record<string, unknown> | null }[] }).data;
}

describe('client: server-side mode', () => {
  it('attributes each call to the actor, account, license and session it names, per call, per scope and per async scope; nothing global', async () => {
    const tn = await tenant(server, 'business');
    const issues: TallyIssue[] = [];
    const client = createClient(options(tn.ingestKey, { mode: 'server', onError: (i) => issues.push(i) }));
    assert.equal(client.actorId, undefined, 'no identity of the process');
    assert.equal(client.sessionId, undefined, 'no automatic session');
    const direct = client.track('api', 'call', { n: 1 }, { actorId: 'user-a', accountId: 'acme', licenseId: 'L1' });
    const bob = client.scope({ actorId: 'user-b', accountId: 'globex' });
    const session = bob.startSession({ via: 'api' })!;
    const scoped = bob.scope({ sessionId: session }).track('api', 'call', { n: 2 });
    // Two "requests" interleaved across awaits: each keeps its own scope.
    const handle = (actorId: string, accountId: string, ms: number) =>
      client.withScope({ actorId, accountId }, async () => {
        await new Promise((r) => setTimeout(r, ms));
        return client.track('api', 'request');
      });
    const [c, d] = await Promise.all([handle('user-c', 'acme', 30), handle('user-d', 'initech', 5)]);
    assert.equal(client.track('api', 'nobody'), undefined, 'without an actor the event is refused');
    client.setAccount('acme');
    bob.endSession({ sessionId: session });
    await client.flush();
    const byId = new Map((await events(tn.id)).map((e) => [e.event_id, e]));
    assert.deepEqual(
      [byId.get(direct!)!.actor_id, byId.get(direct!)!.account_id, byId.get(direct!)!.license_id, byId.get(direct!)!.session_id],
      ['user-a', 'acme', 'L1', null],
    );
    assert.deepEqual([byId.get(scoped!)!.actor_id, byId.get(scoped!)!.account_id, byId.get(scoped!)!.session_id], ['user-b', 'globex', session]);
    assert.deepEqual([byId.get(c!)!.actor_id, byId.get(c!)!.account_id], ['user-c', 'acme']);
    assert.deepEqual([byId.get(d!)!.actor_id, byId.get(d!)!.account_id], ['user-d', 'initech']);
    assert.equal(byId.size, 4);
    assert.deepEqual(
      await rows(server.t.db, 'SELECT actor_id FROM environments WHERE tenant_id = $1', [tn.id]),
      [],
      "no X-Environment-Data: the process's runtime is not the users' environment",
    );
    const [s] = await sessions(server.t.db, tn.id);
    assert.deepEqual([s!.session_id, s!.actor_id, s!.account_id, s!.end_reason], [session, 'user-b', 'globex', 'normal']);
    assert.deepEqual(
      issues.map((i) => [i.code, i.reason]),
      [
        ['refused', 'missing_actor'],
        ['misuse', undefined],
      ],
    );
    // An exception no call names is the process's own ('server', or options.actorId).
    client.captureException(new Error('background job failed'));
    bob.captureException(new Error('request failed'));
    await client.flush();
    const xs = await rows<{ actor_id: string; account_id: string | null; breadcrumbs: unknown }>(
      server.t.db,
      'SELECT actor_id, account_id, breadcrumbs FROM exceptions WHERE tenant_id = $1 ORDER BY actor_id',
      [tn.id],
    );
    assert.deepEqual(xs, [
      { actor_id: 'server', account_id: null, breadcrumbs: null },
      { actor_id: 'user-b', account_id: 'globex', breadcrumbs: null }, // no other user's calls in it
    ]);
    await client.shutdown();
  });

  it('identify with traits: the login request links its anonymous actor to the user, and the traits show in the account actors', async () => {
    const tn = await tenant(server, 'business');
    const client = createClient(options(tn.ingestKey, { mode: 'server' }));
    const visitor = client.scope({ actorId: 'anon-visitor', accountId: 'acme' });
    visitor.track('web', 'landing');
    visitor.identify('user-9', { plan: 'pro', seats: 3, beta: true });
    client.scope({ actorId: 'user-9', accountId: 'acme' }).track('web', 'dashboard');
    client.identify('user-10', { plan: 'trial' }); // no anonymous actor: a self-link that only sets traits
    client.track('web', 'dashboard', {}, { actorId: 'user-10', accountId: 'acme' });
    await client.flush();
    const links = await rows<{ anonymous_actor_id: string; identified_actor_id: string }>(
      server.t.db,
      'SELECT anonymous_actor_id, identified_actor_id FROM actor_links WHERE tenant_id = $1 ORDER BY 1',
      [tn.id],
    );
    assert.deepEqual(links, [
      { anonymous_actor_id: 'anon-visitor', identified_actor_id: 'user-9' },
      { anonymous_actor_id: 'user-10', identified_actor_id: 'user-10' },
    ]);
    assert.deepEqual(
      (await accountActors(tn.adminKey, 'acme')).map((a) => [a.actor_id, a.traits]),
      // The read model counts a linked anonymous actor as its user (CONTRACT.md): anon-visitor is user-9.
      [
        ['user-10', { plan: 'trial' }],
        ['user-9', { plan: 'pro', seats: 3, beta: true }],
      ],
    );
    await client.shutdown();
  });
});

describe('client: user data, consent and filters', () => {
  it('identify(userId, traits) in the default mode; identify again with new traits updates them', async () => {
    const tn = await tenant(server, 'business');
    const client = createClient(options(tn.ingestKey));
    client.setAccount('acme');
    client.track('ui', 'open');
    client.identify('user-1', { name: 'Ada', plan: 'pro' });
    client.track('ui', 'save');
    await client.flush();
    client.identify('user-1', { name: 'Ada', plan: 'business' }, { timestamp: Date.now() + 1000 });
    await client.flush();
    // The device's anonymous actor and user-1 are one actor once linked (CONTRACT.md): user-1.
    const actors = await accountActors(tn.adminKey, 'acme');
    assert.deepEqual(
      actors.map((a) => a.actor_id),
      ['user-1'],
      JSON.stringify(actors),
    );
    assert.ok(
      actors.every((a) => JSON.stringify(a.traits) === JSON.stringify({ name: 'Ada', plan: 'business' })),
      JSON.stringify(actors),
    );
    await client.shutdown();
  });

  it('register/unregister global properties, a per-event timestamp, and local refusals for bad ones', async () => {
    const tn = await tenant(server);
    const issues: TallyIssue[] = [];
    const client = createClient(options(tn.ingestKey, { onError: (i) => issues.push(i) }));
    client.register({ app_build: '2024.1', region: 'eu' });
    client.register({ account: 'x' }); // reserved: refused, nothing registered
    const a = client.track('ui', 'a', { region: 'us', n: 1 }, { timestamp: '2026-01-02T03:04:05.678+02:00' });
    client.unregister('region');
    const b = client.track('ui', 'b', undefined, { timestamp: new Date('2026-01-03T00:00:00Z') });
    const c = client.track('ui', 'c', undefined, { timestamp: 'yesterday' });
    await client.flush();
    const byId = new Map((await events(tn.id)).map((e) => [e.event_id, e]));
    assert.deepEqual(byId.get(a!)!.properties, { app_build: '2024.1', region: 'us', n: 1 }, "the call's own property wins");
    assert.equal(byId.get(a!)!.timestamp.toISOString(), '2026-01-02T01:04:05.678Z');
    assert.deepEqual(byId.get(b!)!.properties, { app_build: '2024.1' });
    assert.equal(byId.get(b!)!.timestamp.toISOString(), '2026-01-03T00:00:00.000Z');
    assert.equal(c, undefined);
    assert.deepEqual(
      issues.map((i) => [i.code, i.reason]),
      [
        ['refused', 'reserved_property_key'],
        ['refused', 'invalid_event'],
      ],
    );
    await client.shutdown();
  });

  it('optOut() is kept on storage across restarts, deletes what was queued, and optIn() sends again', async () => {
    const tn = await tenant(server);
    const dir = tempDir();
    const rec = recordingFetch();
    const first = createClient(options(tn.ingestKey, { storage: undefined, queueDir: dir, fetch: rec.fetch, endpoint: 'http://127.0.0.1:9' }));
    first.track('ui', 'before-consent-withdrawn'); // unsendable (nothing listens on port 9): still queued
    first.optOut();
    assert.equal(first.track('ui', 'after'), undefined);
    assert.equal(first.stats().queued, 0, 'the session start and the event are deleted: neither was ever sent');
    await first.shutdown({ timeoutMs: 200 });
    const second = createClient(options(tn.ingestKey, { storage: undefined, queueDir: dir, fetch: rec.fetch }));
    assert.equal(second.optedOut, true, 'remembered in the queue directory');
    assert.equal(second.sessionId, undefined, 'no session while opted out');
    assert.equal(second.track('ui', 'still-out'), undefined);
    second.identify('user-1');
    second.captureException(new Error('not sent'));
    await second.flush();
    assert.equal(rec.log.filter((r) => r.status !== 'error').length, 0, 'nothing reached the server');
    second.optIn();
    const id = second.track('ui', 'consented');
    assert.ok(second.sessionId, 'optIn starts a session as init would');
    await second.shutdown();
    assert.deepEqual(await storedEventIds(server.t.db, tn.id), [id]);
    const third = createClient(options(tn.ingestKey, { storage: undefined, queueDir: dir, autoSession: false }));
    assert.equal(third.optedOut, false);
    await third.shutdown();
    const consentFirst = createClient(options(tn.ingestKey, { optOutByDefault: true }));
    assert.equal(consentFirst.track('ui', 'x'), undefined, 'optOutByDefault: nothing before optIn()');
    await consentFirst.shutdown();
  });

  it('records a previous run left on storage while opted out (its deletes never committed) are deleted as they load, even after an early optIn()', async () => {
    const tn = await tenant(server);
    // A storage that loads asynchronously and loses its deletes, as IndexedDB does when the page
    // goes away before they commit.
    const inner = new MemoryStorage();
    const storage: QueueStorage = {
      load: () => new Promise((resolve) => setTimeout(() => resolve(inner.load()), 50)),
      put: (r) => inner.put(r),
      remove: () => undefined,
      getState: (k) => inner.getState(k),
      setState: (k, v) => inner.setState(k, v),
    };
    const first = createClient(options(tn.ingestKey, { storage, endpoint: 'http://127.0.0.1:9', autoSession: false }));
    await first.flush();
    first.track('ui', 'withdrawn');
    first.optOut();
    await first.shutdown({ timeoutMs: 100 });
    assert.equal(inner.load().length, 1, 'the withdrawn event is still on storage');
    const second = createClient(options(tn.ingestKey, { storage, autoSession: false }));
    assert.equal(second.optedOut, true);
    second.optIn(); // before the storage has loaded
    const id = second.track('ui', 'consented');
    await second.shutdown();
    assert.deepEqual(await storedEventIds(server.t.db, tn.id), [id]);
  });

  it('an open session whose start was sent is ended at optOut(); nothing else goes', async () => {
    const tn = await tenant(server);
    const client = createClient(options(tn.ingestKey));
    const session = client.sessionId;
    await client.flush();
    client.track('ui', 'queued-then-withdrawn');
    client.optOut();
    await client.shutdown();
    assert.deepEqual(await storedEventIds(server.t.db, tn.id), []);
    assert.deepEqual(
      (await sessions(server.t.db, tn.id)).map((s) => [s.session_id, s.end_reason]),
      [[session, 'normal']],
    );
  });

  it('disabled: no storage, no request, nothing queued', async () => {
    const tn = await tenant(server);
    const rec = recordingFetch();
    const hooks = process.listenerCount('beforeExit');
    const dir = join(tempDir(), 'never-made');
    const client = createClient(
      options(tn.ingestKey, { disabled: true, storage: undefined, queueDir: dir, fetch: rec.fetch, handleExit: true, captureUncaught: true }),
    );
    assert.equal(client.track('ui', 'x'), undefined);
    client.identify('u');
    client.captureException(new Error('x'));
    assert.deepEqual(await client.flush(), { delivered: true, remaining: 0 });
    assert.equal(process.listenerCount('beforeExit'), hooks, 'no exit hooks');
    await client.shutdown();
    assert.equal(rec.log.length, 0);
    assert.equal(existsSync(dir), false, 'not even the queue directory is made');
  });

  it('beforeSend changes or drops events (a throw drops and reports), sampleRate keeps a share, and debug logs why', async () => {
    const tn = await tenant(server);
    const logs: string[] = [];
    const issues: TallyIssue[] = [];
    const client = createClient(
      options(tn.ingestKey, {
        debug: true,
        logger: { warn: () => undefined, debug: (m) => logs.push(m) },
        onError: (i) => issues.push(i),
        beforeSend: (e: WireEvent) => {
          if (e.name === 'secret') return null;
          if (e.name === 'boom') throw new Error('scrubber bug');
          if (e.name === 'nested') return { ...e, properties: { a: { b: 1 } } } as unknown as WireEvent;
          return { ...e, properties: { ...e.properties, email: '[redacted]' } };
        },
      }),
    );
    const kept = client.track('ui', 'signup', { email: 'ada@example.com' });
    assert.equal(client.track('ui', 'secret'), undefined);
    assert.equal(client.track('ui', 'boom'), undefined);
    assert.equal(client.track('ui', 'nested'), undefined);
    await client.flush();
    const [row] = await events(tn.id);
    assert.equal(row!.event_id, kept);
    assert.deepEqual(row!.properties, { email: '[redacted]' });
    assert.deepEqual(
      issues.map((i) => i.reason),
      ['before_send_failed', 'invalid_event'],
    );
    assert.ok(
      logs.some((m) => m.startsWith('queued event ui/signup')),
      logs.join('\n'),
    );
    assert.ok(
      logs.some((m) => m === 'not queued: event ui/secret: beforeSend returned null'),
      logs.join('\n'),
    );
    assert.ok(
      logs.some((m) => /^POST \/v1\/events \(1 event\(s\), with X-Environment-Data\): 200$/.test(m)),
      logs.join('\n'),
    );
    assert.ok(
      logs.some((m) => m.startsWith('POST /v1/events/sessions: 200')),
      logs.join('\n'),
    );
    await client.shutdown();

    const sampled = createClient(options(tn.ingestKey, { sampleRate: 0.25, autoSession: false, flushAt: 1000 }));
    const ids = Array.from({ length: 800 }, (_, i) => sampled.track('ui', 'sampled', { i })).filter(Boolean);
    assert.ok(ids.length > 120 && ids.length < 280, `kept ${ids.length} of 800 at 0.25`);
    assert.equal(sampled.stats().filtered, 800 - ids.length);
    assert.ok(sampled.captureException(new Error('never sampled')));
    await sampled.shutdown();
    const none = createClient(options(tn.ingestKey, { sampleRate: 0, autoSession: false }));
    assert.equal(none.track('ui', 'x'), undefined);
    await none.shutdown();
    assert.throws(() => createClient(options(tn.ingestKey, { sampleRate: 1.5 })), /sampleRate/);
  });

  it("page() in Node: the URL given, without its query string, its path, and the previous page as referrer (never another user's in server mode)", async () => {
    const tn = await tenant(server);
    const client = createClient(options(tn.ingestKey, { autoSession: false }));
    const a = client.page(
      { section: 'docs' },
      { url: 'https://example.com/docs/start?token=secret#intro', title: 'Start', referrer: 'https://search.example/?q=tally' },
    );
    const b = client.page(undefined, { url: 'https://example.com/docs/next?x=1' });
    assert.equal(client.page(), undefined, 'outside a browser page() needs a url');
    await client.flush();
    const byId = new Map((await events(tn.id)).map((e) => [e.event_id, e]));
    assert.equal(byId.get(a!)!.name, 'view');
    assert.deepEqual(byId.get(a!)!.properties, {
      url: 'https://example.com/docs/start',
      path: '/docs/start',
      title: 'Start',
      referrer: 'https://search.example/',
      section: 'docs',
    });
    assert.deepEqual(byId.get(b!)!.properties, { url: 'https://example.com/docs/next', path: '/docs/next', referrer: 'https://example.com/docs/start' });
    await client.shutdown();
    // Server mode: the previous page view was another user's, so it is never the referrer.
    const server_ = createClient(options(tn.ingestKey, { mode: 'server' }));
    server_.page(undefined, { actorId: 'user-a', url: 'https://example.com/private/report-1' });
    const c = server_.page(undefined, { actorId: 'user-b', url: 'https://example.com/pricing' });
    await server_.shutdown();
    const [row] = await rows<{ properties: Record<string, unknown> }>(server.t.db, 'SELECT properties FROM events WHERE tenant_id = $1 AND event_id = $2', [
      tn.id,
      c,
    ]);
    assert.deepEqual(row!.properties, { url: 'https://example.com/pricing', path: '/pricing' });
  });
});
