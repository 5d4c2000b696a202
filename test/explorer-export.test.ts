// The event export's exact bytes, on both stores (PGlite: keyset pages; PostgreSQL: one COPY), and
// on PostgreSQL what an export holds: its connection, released when the client goes and when the
// server takes too long. Real store, real app, a real socket where the client must go away.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { event, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';
import { openDb } from '../src/storage/db.js';

let t: TestApp;
let k: Awaited<ReturnType<typeof tenantWithProduct>>;
before(async () => {
  t = await startTestApp();
  k = await tenantWithProduct(t.app, 'business');
});
after(async () => t.close());

const HEADER =
  'event_id,occurred_at,received_at,product,product_version,category,name,actor_id,identified_actor_id,session_id,account_id,license_id,properties\r\n';
const exportOf = async (app: TestApp['app'], key: string, query: string, accept: string) => {
  const res = await app.inject({ method: 'GET', url: `/v1/events?${query}`, headers: { authorization: `Bearer ${key}`, accept } });
  assert.equal(res.statusCode, 200, res.body);
  return res;
};

describe('the export, byte for byte', () => {
  // Values with what CSV quotes, what JSON escapes, what COPY's text format would escape
  // (backslash, tab, CR, LF), spreadsheet formulas and characters of 2, 3 and 4 bytes in UTF-8.
  const sent = [
    event({
      timestamp: '2026-07-01T10:00:00.003Z',
      actor_id: 'a "quoted", comma',
      account_id: 'acc\\back',
      properties: { note: 'line1\nline2\r\nend', path: 'C:\\dir\\file\ttab', emoji: 'héllo 🌍 日本' },
    }),
    event({ timestamp: '2026-07-01T10:00:00.002Z', actor_id: '=SUM(A1)', name: 'tab\there', properties: { 'k"ey': 'v,al' } }),
    // empty properties are stored as none
    event({ timestamp: '2026-07-01T10:00:00.001Z', actor_id: '-1\\', license_id: 'ünï', properties: {} }),
    event({ timestamp: '2026-07-01T10:00:00.000Z', actor_id: 'plain', product_version: '2.0', category: 'app', name: '\\N', properties: undefined }),
  ];
  const QUERY = 'from=2026-07-01&to=2026-07-02';
  let received: Map<string, string>;
  before(async () => {
    const res = await postEvents(t.app, k.ingestKey, sent);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(
      res.json().results.map((r: { status: string }) => r.status),
      ['accepted', 'accepted', 'accepted', 'accepted'],
    );
    const page = (await t.app.inject({ method: 'GET', url: `/v1/events?${QUERY}`, headers: { authorization: `Bearer ${k.adminKey}` } })).json();
    received = new Map(page.data.map((e: { event_id: string; received_at: string }) => [e.event_id, e.received_at]));
  });
  const id = (i: number) => sent[i]!.event_id as string;
  const at = (i: number) => sent[i]!.timestamp as string;
  const recv = (i: number) => received.get(id(i))!;

  it('CSV: cells quoted, quotes doubled, formulas prefixed, backslashes, tabs and line breaks as sent', async () => {
    const res = await exportOf(t.app, k.adminKey, QUERY, 'text/csv');
    assert.equal(
      res.body,
      HEADER +
        `${id(0)},${at(0)},${recv(0)},app,1.0.0,ui,click,"a ""quoted"", comma",,,acc\\back,,"{""note"": ""line1\\nline2\\r\\nend"", ""path"": ""C:\\\\dir\\\\file\\ttab"", ""emoji"": ""héllo 🌍 日本""}"\r\n` +
        `${id(1)},${at(1)},${recv(1)},app,1.0.0,ui,tab\there,'=SUM(A1),,,,,"{""k\\""ey"": ""v,al""}"\r\n` +
        `${id(2)},${at(2)},${recv(2)},app,1.0.0,ui,click,'-1\\,,,,ünï,\r\n` +
        `${id(3)},${at(3)},${recv(3)},app,2.0,app,\\N,plain,,,,,\r\n`,
    );
    // The same as bytes: nothing re-encoded on the way.
    assert.equal(Buffer.compare(res.rawPayload, Buffer.from(res.body, 'utf8')), 0);
  });

  it('NDJSON: each line the JSON page says, escapes as JSON writes them', async () => {
    const res = await exportOf(t.app, k.adminKey, QUERY, 'application/x-ndjson');
    const line = (i: number, rest: string, props: string, account: string, license: string) =>
      `{"event_id":"${id(i)}","occurred_at":"${at(i)}","received_at":"${recv(i)}","product":"app",${rest},"identified_actor_id":null,"session_id":null,"properties":${props},"account_id":${account},"license_id":${license}}\n`;
    assert.equal(
      res.body,
      line(
        0,
        '"product_version":"1.0.0","category":"ui","name":"click","actor_id":"a \\"quoted\\", comma"',
        '{"note": "line1\\nline2\\r\\nend", "path": "C:\\\\dir\\\\file\\ttab", "emoji": "héllo 🌍 日本"}',
        '"acc\\\\back"',
        'null',
      ) +
        line(1, '"product_version":"1.0.0","category":"ui","name":"tab\\there","actor_id":"=SUM(A1)"', '{"k\\"ey": "v,al"}', 'null', 'null') +
        line(2, '"product_version":"1.0.0","category":"ui","name":"click","actor_id":"-1\\\\"', 'null', 'null', '"ünï"') +
        line(3, '"product_version":"2.0","category":"app","name":"\\\\N","actor_id":"plain"', 'null', 'null', 'null'),
    );
    const page = (await t.app.inject({ method: 'GET', url: `/v1/events?${QUERY}`, headers: { authorization: `Bearer ${k.adminKey}` } })).json();
    assert.deepEqual(
      res.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
      page.data,
    );
  });

  it('thousands of long rows with multi-byte characters: every row once, whole, in order', async () => {
    // ~1.5 kB a row, 3,000 rows: the server's 64 kB messages end inside rows and inside characters.
    const big = await tenantWithProduct(t.app, 'business');
    const long = (i: number) => Object.fromEntries(Array.from({ length: 6 }, (_, j) => [`k${j}`, `${'é🌍"\\,\n'.repeat(30)}${i}-${j}`.slice(0, 256)]));
    for (let b = 0; b < 10; b++) {
      const batch = Array.from({ length: 300 }, (_, i) =>
        event({
          timestamp: new Date(Date.UTC(2026, 7, 1) + (b * 300 + i) * 1000).toISOString(),
          actor_id: `actor ${i % 7}, "x"`,
          properties: long(b * 300 + i),
        }),
      );
      assert.equal((await postEvents(t.app, big.ingestKey, batch)).statusCode, 200);
    }
    const res = await exportOf(t.app, big.adminKey, 'from=2026-08-01&to=2026-08-02', 'application/x-ndjson');
    const lines = res.body.split('\n');
    assert.equal(lines.pop(), '');
    assert.equal(lines.length, 3000);
    lines.forEach((l, r) => {
      const e = JSON.parse(l);
      assert.deepEqual(e.properties, long(2999 - r), `row ${r}`);
    });
    const csv = await exportOf(t.app, big.adminKey, 'from=2026-08-01&to=2026-08-02', 'text/csv');
    assert.ok(csv.body.startsWith(HEADER));
    assert.ok(csv.body.endsWith('"\r\n'));
    // every row's first cell is an event id right after a CRLF: 3,000 of them, none split
    assert.equal(csv.body.match(/\r\n[0-9a-f]{8}-[0-9a-f]{4}-/g)?.length, 3000);
  });
});

describe('the export with a segment and every filter', () => {
  // The filters' values go into the COPY as literals on PostgreSQL: a quote and a backslash in a
  // name, a number, a version and the range's dates, a property, an actor and a cursor.
  it('has the rows the JSON pages have, in their order', async () => {
    const s = await tenantWithProduct(t.app, 'business');
    const NAME = "it's \\ ok";
    const at = (i: number) => new Date(Date.UTC(2026, 9, 1, 10) + i * 60_000).toISOString();
    const batch = [
      ...[0, 1, 2].map((i) => event({ timestamp: at(i), actor_id: "o'neil\\", name: NAME, properties: { screen: 'home' } })),
      ...[3, 4].map((i) => event({ timestamp: at(i), actor_id: 'b', name: NAME, product_version: '2.0.0', properties: { screen: 'home' } })),
      event({ timestamp: at(5), actor_id: 'b', name: 'other', properties: { screen: 'x' } }),
      event({ timestamp: at(6), actor_id: 'c', name: NAME, properties: { screen: 'home' } }),
    ];
    assert.equal((await postEvents(t.app, s.ingestKey, batch)).statusCode, 200);
    const seg = await t.app.inject({
      method: 'POST',
      url: '/v1/segments',
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify({
        name: 'twice',
        definition: { from: '2026-10-01', to: '2026-10-02', did: [{ category: 'ui', name: NAME, properties: { screen: 'home' }, min_count: 2 }] },
      }),
    });
    assert.equal(seg.statusCode, 201, seg.body);
    const segment = seg.json().id as string;
    const base = `from=2026-10-01&to=2026-10-02&segment_id=${segment}`;
    const json = async (query: string, limit = 500) => {
      const res = await t.app.inject({ method: 'GET', url: `/v1/events?${query}&limit=${limit}`, headers: { authorization: `Bearer ${s.adminKey}` } });
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    };
    const nd = async (query: string) =>
      (await exportOf(t.app, s.adminKey, query, 'application/x-ndjson')).body
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    // The segment: o'neil\ (3) and b (2 on 2.0.0); not c (once). b's "other" event is b's too.
    const all = await json(base);
    assert.deepEqual(
      all.data.map((e: { actor_id: string }) => e.actor_id),
      ['b', 'b', 'b', "o'neil\\", "o'neil\\", "o'neil\\"],
    );
    assert.deepEqual(await nd(base), all.data);
    const q = `${base}&name=${encodeURIComponent(NAME)}&property=screen:home&actor_id=${encodeURIComponent("o'neil\\")}`;
    assert.deepEqual(await nd(q), (await json(q)).data);
    assert.equal((await nd(q)).length, 3);
    const v = `${base}&product=app&version=2.0.0`;
    assert.deepEqual(await nd(v), (await json(v)).data);
    assert.equal((await nd(v)).length, 2);
    const first = await json(base, 2);
    const after = await nd(`${base}&cursor=${first.next_cursor}`);
    assert.deepEqual(after, all.data.slice(2));
  });
});

describe('on PostgreSQL: the connection an export holds', () => {
  // A second app on the same database with a pool of 2 (exports: 2 connections of their own) and a
  // 500 ms statement timeout; a tenant whose export is ~10 MB, far more than the sockets buffer.
  let pgApp: TestApp;
  let key: string;
  let url: string;
  before(async () => {
    if (t.db.kind !== 'postgres') return;
    pgApp = await startTestApp({ db: await openDb({ databaseUrl: process.env.TEST_DATABASE_URL, poolSize: 2, statementTimeoutMs: 500 }) });
    const tenant = await tenantWithProduct(pgApp.app, 'business');
    key = tenant.adminKey;
    for (let b = 0; b < 10; b++) {
      const batch = Array.from({ length: 1000 }, (_, i) =>
        event({ timestamp: new Date(Date.UTC(2026, 8, 1) + (b * 1000 + i) * 1000).toISOString(), properties: { pad: 'x'.repeat(256), i: b * 1000 + i } }),
      );
      assert.equal((await postEvents(pgApp.app, tenant.ingestKey, batch)).statusCode, 200);
    }
    await pgApp.app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(pgApp.app.server.address() as { port: number }).port}/v1/events?from=2026-09-01&to=2026-09-02`;
  });
  after(async () => pgApp?.close());

  /** Exports running on the server: COPY statements of this database not yet ended. */
  const copies = async () =>
    (
      await t.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'COPY (SELECT%' AND state <> 'idle' AND pid <> pg_backend_pid()`,
      )
    )[0]!.n;
  const settled = async (what: () => Promise<number>) => {
    for (let i = 0; i < 50 && (await what()) > 0; i++) await new Promise((r) => setTimeout(r, 100));
    return what();
  };

  it('a client that goes away mid-export ends its COPY and frees its connection, every time', async (ctx) => {
    if (t.db.kind !== 'postgres') return ctx.skip('PostgreSQL only');
    // Five exports abandoned after their first chunk, one after another, on a pool of 2.
    for (let n = 0; n < 5; n++) {
      await new Promise<void>((resolve, reject) => {
        const req = http.get(url, { headers: { authorization: `Bearer ${key}`, accept: 'text/csv' } }, (res) => {
          assert.equal(res.statusCode, 200);
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)));
      });
    }
    assert.equal(await settled(copies), 0, 'a COPY still runs after its client went');
    // Both export connections are free again: a whole export, then two at once.
    const whole = async () =>
      new Promise<number>((resolve, reject) => {
        http
          .get(url, { headers: { authorization: `Bearer ${key}`, accept: 'application/x-ndjson' } }, (res) => {
            let lines = 0;
            res.on('data', (c: Buffer) => (lines += c.toString('latin1').split('\n').length - 1));
            res.on('end', () => resolve(res.statusCode === 200 ? lines : -res.statusCode!));
          })
          .on('error', reject);
      });
    assert.deepEqual(await Promise.all([whole(), whole()]), [10_000, 10_000]);
    assert.equal(await settled(copies), 0);
  });

  it('a client that reads slowly is not cut off by the statement timeout', async (ctx) => {
    if (t.db.kind !== 'postgres') return ctx.skip('PostgreSQL only');
    // The export is paused twice for longer than the 500 ms timeout: the server waits on the socket, not on a statement.
    const lines = await new Promise<number>((resolve, reject) => {
      http
        .get(url, { headers: { authorization: `Bearer ${key}`, accept: 'application/x-ndjson' } }, (res) => {
          let [n, pauses] = [0, 0];
          res.on('data', (c: Buffer) => {
            n += c.toString('latin1').split('\n').length - 1;
            if (pauses < 2 && n > 3000 * (pauses + 1)) {
              pauses++;
              res.pause();
              setTimeout(() => res.resume(), 1500);
            }
          });
          res.on('end', () => resolve(n));
        })
        .on('error', reject);
    });
    assert.equal(lines, 10_000);
  });

  it('a client that goes away while the export waits for its first row: the COPY ends once it starts', async (ctx) => {
    if (t.db.kind !== 'postgres') return ctx.skip('PostgreSQL only');
    // Another app with a 5 s statement timeout; the events table locked for 1.5 s; the client gone after 0.5 s.
    const patient = await startTestApp({ db: await openDb({ databaseUrl: process.env.TEST_DATABASE_URL, poolSize: 2, statementTimeoutMs: 5000 }) });
    try {
      await patient.app.listen({ port: 0, host: '127.0.0.1' });
      const there = url.replace(/:\d+\//, `:${(patient.app.server.address() as { port: number }).port}/`);
      await t.db.tx(async (q) => {
        await q.exec('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
        const req = http.get(there, { headers: { authorization: `Bearer ${key}`, accept: 'text/csv' } });
        req.on('error', () => {});
        await new Promise((r) => setTimeout(r, 500));
        req.destroy();
        await new Promise((r) => setTimeout(r, 1000));
      });
      assert.equal(await settled(copies), 0, 'a COPY still runs after its client went');
      const res = await patient.app.inject({
        method: 'GET',
        url: url.replace(/^http:\/\/[^/]+/, ''),
        headers: { authorization: `Bearer ${key}`, accept: 'text/csv' },
      });
      assert.equal(res.statusCode, 200);
      assert.equal(res.body.split('\r\n').length, 10_002);
    } finally {
      await patient.close();
    }
  });

  it('an export waiting on the server past the statement timeout is a 422 before its first byte, and its COPY ends', async (ctx) => {
    if (t.db.kind !== 'postgres') return ctx.skip('PostgreSQL only');
    // Another connection holds the events table locked: the COPY waits past the timeout.
    const res = await t.db.tx(async (q) => {
      await q.exec('LOCK TABLE events IN ACCESS EXCLUSIVE MODE');
      return pgApp.app.inject({ method: 'GET', url: url.replace(/^http:\/\/[^/]+/, ''), headers: { authorization: `Bearer ${key}`, accept: 'text/csv' } });
    });
    assert.equal(res.statusCode, 422, res.body);
    assert.equal(res.json().code, 'query_too_large');
    assert.equal(await settled(copies), 0);
  });
});
