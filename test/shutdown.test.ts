// A real server process (embedded store, or TEST_DATABASE_URL) receiving SIGTERM under a load of
// batches: nothing acknowledged may be lost, and the process exits cleanly within its grace period.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { event } from './helpers/app.js';
import { startServer, type ServerProcess } from './helpers/server-process.js';

const ADMIN = 'shutdown-admin';

const postTo = (url: string, path: string, key: string, body: unknown) =>
  fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** A tenant with product `app` on the server at url: its id and its key with every permission. */
async function tenantOn(url: string, name: string): Promise<{ id: string; admin: string }> {
  type Created = { tenant: { id: string }; api_keys: { key: string; permissions: string[] }[] };
  const created = (await (await postTo(url, '/admin/v1/tenants', ADMIN, { name, plan: 'enterprise' })).json()) as Created;
  const admin = created.api_keys.find((k) => k.permissions.length === 4)!.key;
  assert.equal((await postTo(url, '/v1/products', admin, { slug: 'app' })).status, 201);
  return { id: created.tenant.id, admin };
}

/** The tenant's counted events, read from a server started afresh on the same store. */
async function eventsStored(env: Record<string, string>, tenantId: string): Promise<number> {
  const server = await startServer(env);
  try {
    const res = await fetch(`${server.url}/admin/v1/tenants/${tenantId}`, { headers: { authorization: `Bearer ${ADMIN}` } });
    return ((await res.json()) as { usage: { events: number } }).usage.events;
  } finally {
    await server.stop();
  }
}

describe('graceful shutdown', () => {
  it('BAD-INPUTS 42: SIGTERM during a load of batches: in-flight requests finish or get 503, every acknowledged event is stored', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-sigterm-'));
    const env = { DATA_DIR: dir, ADMIN_TOKEN: ADMIN, DATABASE_URL: process.env.TEST_DATABASE_URL ?? '', SHUTDOWN_GRACE_MS: '10000' };
    try {
      const server = await startServer(env);
      const { id: tenantId, admin } = await tenantOn(server.url, 'sigterm');
      const post = (path: string, key: string, body: unknown) => postTo(server.url, path, key, body);

      let acknowledged = 0;
      const statuses = new Map<string, number>();
      let stop = false;
      const sender = async () => {
        while (!stop) {
          try {
            const res = await post(
              '/v1/events',
              admin,
              Array.from({ length: 100 }, () => event()),
            );
            statuses.set(String(res.status), (statuses.get(String(res.status)) ?? 0) + 1);
            if (res.status === 200) acknowledged += ((await res.json()) as { accepted: number }).accepted;
            else await res.arrayBuffer();
            if (res.status === 503) assert.ok(Number(res.headers.get('retry-after')) >= 1);
          } catch {
            statuses.set('connection error', (statuses.get('connection error') ?? 0) + 1);
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      };
      const senders = Array.from({ length: 4 }, sender);
      await new Promise((r) => setTimeout(r, 1500));
      const started = Date.now();
      const code = await server.stop('SIGTERM');
      stop = true;
      await Promise.all(senders);
      assert.equal(code, 0, server.output());
      assert.ok(Date.now() - started < 10_000, 'exited within the grace period');
      assert.ok(acknowledged > 0, 'some batches were acknowledged before the signal');
      for (const s of statuses.keys()) assert.ok(['200', '503', 'connection error'].includes(s), `unexpected status ${s}`);

      // Every acknowledged event is stored; at most the four batches in flight when the process
      // closed may have committed without their answer reaching the client.
      const stored = await eventsStored(env, tenantId);
      assert.ok(stored >= acknowledged, `stored ${stored} < acknowledged ${acknowledged}`);
      assert.ok(stored <= acknowledged + 400);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('BAD-INPUTS 42: after SIGTERM, while an in-flight request holds the drain, /readyz never answers 200: 503 shutting_down on the kept-alive connection, a new connection refused or 503; the in-flight request finishes and its event is stored', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-sigterm-ready-'));
    // LOG_LEVEL info: the server's "shutting down" line says the signal was handled. It is written
    // in the same synchronous step that turns readiness off and begins the close.
    const env = { DATA_DIR: dir, ADMIN_TOKEN: ADMIN, DATABASE_URL: process.env.TEST_DATABASE_URL ?? '', SHUTDOWN_GRACE_MS: '20000', LOG_LEVEL: 'info' };
    let server: ServerProcess | undefined;
    let opened: Socket | undefined;
    try {
      server = await startServer(env);
      const { id: tenantId, admin } = await tenantOn(server.url, 'sigterm-ready');
      assert.equal((await fetch(`${server.url}/readyz`)).status, 200, 'ready before the signal');

      // The in-flight request: its headers sent with Expect: 100-continue, so that the server's
      // "100 Continue" says it has the request (a connection with a request in progress is not
      // idle: the close waits for it); its body is held back until after the signal.
      const body = JSON.stringify([event()]);
      const head = (method: string, path: string, extra: string) => `${method} ${path} HTTP/1.1\r\nHost: tally\r\n${extra}\r\n`;
      const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
      opened = socket;
      let received = '';
      socket.on('data', (d) => (received += d.toString()));
      const ended = new Promise((resolve) => socket.once('close', resolve));
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(
        head(
          'POST',
          '/v1/events',
          `Authorization: Bearer ${admin}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n`,
        ),
      );
      for (const until = Date.now() + 10_000; !received.startsWith('HTTP/1.1 100 ');) {
        assert.ok(Date.now() < until, `no 100 Continue: ${received}`);
        await new Promise((r) => setTimeout(r, 20));
      }

      const exited = server.stop('SIGTERM');
      await server.printed('shutting down: readiness off');
      // A new connection now: refused (the listener is closed) or, had it slipped in, a 503.
      const fresh = await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(5000) }).then(
        (res) => res.status,
        () => 'no connection',
      );
      assert.ok(fresh === 503 || fresh === 'no connection', `a new /readyz after SIGTERM answered ${fresh}`);
      assert.equal(server.child.exitCode, null, 'the process is still draining the in-flight request');

      // The rest of the body, and /readyz pipelined behind it on the same connection.
      socket.write(body + head('GET', '/readyz', ''));
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 10_000))]);
      socket.destroy();
      assert.equal(await exited, 0, server.output());

      const answers = received.split(/(?=HTTP\/1\.1 )/);
      assert.equal(answers.length, 3, received);
      assert.match(answers[1]!, /^HTTP\/1\.1 200 /, `the in-flight request finishes: ${answers[1]}`);
      const [rawHead, rawBody] = answers[2]!.split('\r\n\r\n');
      assert.match(rawHead!, /^HTTP\/1\.1 503 /, answers[2]);
      assert.match(rawHead!, /\r\ncontent-type: application\/problem\+json/i);
      const retryAfter = /\r\nretry-after: *(\d+)/i.exec(rawHead!)?.[1];
      assert.ok(Number(retryAfter) >= 1, rawHead);
      assert.deepEqual([JSON.parse(rawBody!).status, JSON.parse(rawBody!).code], [503, 'shutting_down']);

      assert.equal(await eventsStored(env, tenantId), 1, 'the acknowledged event is stored');
    } finally {
      // On a failure half-way: nothing left running or open.
      opened?.destroy();
      if (server && server.child.exitCode === null && server.child.signalCode === null) await server.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('BAD-INPUTS 42: readiness fails first: for SHUTDOWN_DELAY_MS after SIGTERM, /readyz answers 503 on new connections while ingestion is still served; then it exits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-sigterm-delay-'));
    const env = {
      DATA_DIR: dir,
      ADMIN_TOKEN: ADMIN,
      DATABASE_URL: process.env.TEST_DATABASE_URL ?? '',
      SHUTDOWN_DELAY_MS: '5000',
      LOG_LEVEL: 'info',
    };
    let server: ServerProcess | undefined;
    try {
      server = await startServer(env);
      const url = server.url;
      const { id: tenantId, admin } = await tenantOn(url, 'sigterm-delay');

      const exited = server.stop('SIGTERM');
      await server.printed('shutting down: readiness off');
      const ready = await fetch(`${url}/readyz`);
      assert.equal(ready.status, 503, 'a balancer probing now sees not-ready, not a refused connection');
      assert.equal(((await ready.json()) as { code: string }).code, 'shutting_down');
      assert.equal((await fetch(`${url}/healthz`)).status, 200, 'liveness stays up');
      assert.equal((await postTo(url, '/v1/events', admin, [event()])).status, 200, 'requests are still served while the balancer catches up');
      assert.equal(await exited, 0, server.output());

      assert.equal(await eventsStored(env, tenantId), 1, 'the event acknowledged during the delay is stored');
    } finally {
      if (server && server.child.exitCode === null && server.child.signalCode === null) await server.stop('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
