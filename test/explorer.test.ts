// The event explorer, its NDJSON and CSV export, and CSV on reports, over app.inject against a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL); nothing is faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, event, foldReadModel, get, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
let tenant: Awaited<ReturnType<typeof tenantWithProduct>>;
const at = (i: number) => `2026-04-0${1 + (i % 3)}T10:00:00.${String(i).padStart(3, '0')}Z`;

before(async () => {
  t = await startTestApp();
  tenant = await tenantWithProduct(t.app, 'business');
  // e0..e5: days Apr 1, 2, 3, 1, 2, 3 (milliseconds = index); even ones are "open", odd ones "save".
  const batch = Array.from({ length: 6 }, (_, i) =>
    event({
      timestamp: at(i),
      name: i % 2 ? 'save' : 'open',
      actor_id: `u${i % 2}`,
      account_id: 'acme',
      properties: { n: String(i), note: i === 5 ? '=cmd|"x",y' : 'plain' },
    }),
  );
  assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
});
after(async () => t.close());

const RANGE = 'from=2026-04-01&to=2026-04-04';
const order = [5, 2, 4, 1, 3, 0].map((i) => at(i)); // newest first: Apr 3 (.005, .002), Apr 2 (.004, .001), Apr 1 (.003, .000)

describe('GET /v1/events', () => {
  it('lists newest first and pages by cursor', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(t.app, tenant.adminKey, `/v1/events?${RANGE}&limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      seen.push(...body.data.map((e: { occurred_at: string }) => e.occurred_at));
      cursor = body.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, order);
  });

  it('filters by name, property and actor; shows accounts only to keys that may see them', async () => {
    const body = (await get(t.app, tenant.adminKey, `/v1/events?${RANGE}&name=save&property=n:3`)).json();
    assert.deepEqual(
      body.data.map((e: { properties: { n: string }; account_id: string }) => [e.properties.n, e.account_id]),
      [['3', 'acme']],
    );
    const byActor = (await get(t.app, tenant.adminKey, `/v1/events?${RANGE}&actor_id=u0`)).json();
    assert.equal(byActor.data.length, 3);
  });

  it('another tenant sees none of them; a starter plan sees no account ids', async () => {
    const other = await createTenant(t.app, 'business');
    assert.deepEqual((await get(t.app, other.adminKey, `/v1/events?${RANGE}`)).json().data, []);
    const starter = await tenantWithProduct(t.app, 'starter');
    assert.equal((await postEvents(t.app, starter.ingestKey, [event({ timestamp: at(1), account_id: 'acme' })])).statusCode, 200);
    const [row] = (await get(t.app, starter.adminKey, `/v1/events?${RANGE}`)).json().data;
    assert.equal('account_id' in row, false);
  });

  it('exports every match as NDJSON and as CSV, streamed', async () => {
    const nd = await t.app.inject({
      method: 'GET',
      url: `/v1/events?${RANGE}&limit=1`,
      headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'application/x-ndjson' },
    });
    assert.equal(nd.statusCode, 200);
    assert.match(String(nd.headers['content-type']), /application\/x-ndjson/);
    assert.equal(nd.headers['x-range-from'], '2026-04-01T00:00:00.000Z');
    assert.deepEqual(
      nd.body
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).occurred_at),
      order,
    );
    const csv = await t.app.inject({
      method: 'GET',
      url: `/v1/events?${RANGE}&name=save`,
      headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' },
    });
    assert.equal(csv.statusCode, 200);
    const lines = csv.body.trim().split('\r\n');
    assert.equal(
      lines[0],
      'event_id,occurred_at,received_at,product,product_version,category,name,actor_id,identified_actor_id,session_id,account_id,license_id,properties',
    );
    assert.equal(lines.length, 4);
    // The JSON of properties is quoted, its quotes doubled; the formula-looking value stays inside the JSON.
    assert.match(lines[1]!, /,"\{""n"": ?""5""/);
    const bad = await t.app.inject({
      method: 'GET',
      url: '/v1/events?tz=Nowhere',
      headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' },
    });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, 'validation_error');
    // interval, a common parameter of the query side (CONTRACT.md), is taken and echoed; compare is not a list's.
    const get = (q: string) => t.app.inject({ method: 'GET', url: `/v1/events?${q}`, headers: { authorization: `Bearer ${tenant.adminKey}` } });
    const echoed = await get('interval=hour');
    assert.equal(echoed.statusCode, 200, echoed.body);
    assert.equal(echoed.json().interval, 'hour');
    for (const q of ['interval=fortnight', 'compare=true']) {
      const res = await get(q);
      assert.equal(res.statusCode, 400, q);
      assert.equal(res.json().errors[0].field, q.split('=')[0]);
    }
  });

  it('an export longer than one page (5,000 rows) has every row once, in order', async () => {
    const big = await tenantWithProduct(t.app, 'business');
    for (let b = 0; b < 6; b++) {
      const batch = Array.from({ length: b < 5 ? 1000 : 10 }, (_, i) =>
        event({ timestamp: new Date(Date.UTC(2026, 4, 1) + (b * 1000 + i) * 1000).toISOString() }),
      );
      assert.equal((await postEvents(t.app, big.ingestKey, batch)).statusCode, 200);
    }
    const nd = await t.app.inject({
      method: 'GET',
      url: '/v1/events?from=2026-05-01&to=2026-05-02',
      headers: { authorization: `Bearer ${big.adminKey}`, accept: 'application/x-ndjson' },
    });
    const times = nd.body
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).occurred_at as string);
    assert.equal(times.length, 5010);
    assert.equal(new Set(times).size, 5010);
    assert.ok(times.every((x, i) => i === 0 || x < times[i - 1]!));
  });
});

describe('GET /v1/events with a version filter (the hourly counts bound the walk)', () => {
  const fold = () => foldReadModel(t.db);

  it('finds events the read model has folded and those it has not, page by page', async () => {
    const own = await tenantWithProduct(t.app, 'business');
    const ev = (timestamp: string, product_version: string, name = 'open') => event({ timestamp, product_version, name, actor_id: 'u' });
    // Folded: 1.0.0 at 10:00 and 11:30 on Apr 1; 2.0.0 on Apr 2 and 3.
    const folded = [ev('2026-04-01T10:00:00.000Z', '1.0.0'), ev('2026-04-01T11:30:00.000Z', '1.0.0'), ev('2026-04-02T09:00:00.000Z', '2.0.0')];
    assert.equal((await postEvents(t.app, own.ingestKey, [...folded, ev('2026-04-03T09:00:00.000Z', '2.0.0', 'save')])).statusCode, 200);
    await fold();
    // Not folded yet: 1.0.0 events after its last folded hour and before its first one.
    const late = [ev('2026-04-03T12:00:00.000Z', '1.0.0'), ev('2026-04-01T08:59:59.999Z', '1.0.0'), ev('2026-04-01T12:00:00.000Z', '1.0.0', 'save')];
    assert.equal((await postEvents(t.app, own.ingestKey, late)).statusCode, 200);
    const list = async (filter: string, range = RANGE) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await get(t.app, own.adminKey, `/v1/events?${range}${filter}&limit=1${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(res.statusCode, 200, res.body);
        seen.push(...res.json().data.map((e: { occurred_at: string }) => e.occurred_at));
        cursor = res.json().next_cursor;
      } while (cursor);
      return seen;
    };
    const expect = async () => {
      const v1 = ['2026-04-03T12:00:00.000Z', '2026-04-01T12:00:00.000Z', '2026-04-01T11:30:00.000Z', '2026-04-01T10:00:00.000Z', '2026-04-01T08:59:59.999Z'];
      assert.deepEqual(await list('&product=app&version=1.0.0'), v1);
      assert.deepEqual(await list('&product=app&version=1.0.0&name=save'), ['2026-04-01T12:00:00.000Z']);
      assert.deepEqual(await list('&name=save'), ['2026-04-03T09:00:00.000Z', '2026-04-01T12:00:00.000Z']);
      assert.deepEqual(await list('&product=app&version=9.9.9'), []);
      assert.deepEqual(await list('&product=app&version=1.0.0', 'from=2026-04-02&to=2026-04-03'), []);
    };
    await expect();
    await fold();
    await expect();
  });
});

describe('the export across pages (EXPORT_PAGE_ROWS=7)', () => {
  let small: TestApp;
  let k: Awaited<ReturnType<typeof tenantWithProduct>>;
  // 60 events, four to a second (ties: the page boundaries fall inside them, where the event id
  // decides), names alternating open/save, n = i mod 3; one actor id a spreadsheet would run, one
  // with a comma and quotes; account ids on every one.
  const actor = (i: number) => (i === 7 ? '=HYPERLINK("x")' : i === 8 ? 'a,"b"' : `u${i % 5}`);
  before(async () => {
    small = await startTestApp({ env: { EXPORT_PAGE_ROWS: '7' } });
    k = await tenantWithProduct(small.app, 'business');
    const batch = Array.from({ length: 60 }, (_, i) =>
      event({
        timestamp: new Date(Date.UTC(2026, 5, 1, 10) + Math.floor(i / 4) * 1000).toISOString(),
        name: i % 2 ? 'save' : 'open',
        actor_id: actor(i),
        account_id: `acct-${i % 4}`,
        properties: { n: String(i % 3), i },
      }),
    );
    assert.equal((await postEvents(small.app, k.ingestKey, batch)).statusCode, 200);
  });
  after(async () => small.close());

  const RANGE6 = 'from=2026-06-01&to=2026-06-02';
  /** The JSON explorer's pages, all of them: what the export must say, row for row. */
  async function pages(query: string) {
    const rows: Record<string, unknown>[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(small.app, k.adminKey, `/v1/events?${RANGE6}&${query}&limit=500${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(res.statusCode, 200, res.body);
      rows.push(...res.json().data);
      cursor = res.json().next_cursor;
    } while (cursor);
    return rows;
  }
  const exportOf = async (query: string, accept: string) => {
    const res = await small.app.inject({ method: 'GET', url: `/v1/events?${RANGE6}&${query}`, headers: { authorization: `Bearer ${k.adminKey}`, accept } });
    assert.equal(res.statusCode, 200, res.body);
    return res.body;
  };
  /** RFC 4180, enough for this: quoted fields with doubled quotes and line breaks inside. */
  function parseCsv(text: string): string[][] {
    const rows: string[][] = [];
    let row: string[] = [];
    let cell = '';
    let quoted = false;
    for (let i = 0; i < text.length; i++) {
      const c = text[i]!;
      if (quoted && c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = !quoted;
      else if (quoted || (c !== ',' && c !== '\r')) cell += c;
      else if (c === ',') {
        row.push(cell);
        cell = '';
      } else {
        // CRLF ends a row (a bare CR outside quotes does not occur in this output)
        row.push(cell);
        rows.push(row);
        [row, cell] = [[], ''];
        i++;
      }
    }
    return rows;
  }

  for (const [label, query, count] of [
    ['everything', '', 60],
    ['name and property filters', 'name=save&property=n:1', 10],
    ['an actor filter', 'actor_id=u2', 11],
  ] as const) {
    it(`NDJSON: ${label}, every row once, in order, as the JSON pages say`, async () => {
      const expected = await pages(query);
      assert.equal(expected.length, count);
      const lines = (await exportOf(query, 'application/x-ndjson')).split('\n');
      assert.equal(lines.pop(), '');
      assert.deepEqual(
        lines.map((l) => JSON.parse(l)),
        expected,
      );
    });

    it(`CSV: ${label}, every row once, in order, cells as the JSON pages say`, async () => {
      const expected = await pages(query);
      const [header, ...rows] = parseCsv(await exportOf(query, 'text/csv'));
      assert.deepEqual(header, [
        'event_id',
        'occurred_at',
        'received_at',
        'product',
        'product_version',
        'category',
        'name',
        'actor_id',
        'identified_actor_id',
        'session_id',
        'account_id',
        'license_id',
        'properties',
      ]);
      assert.equal(rows.length, count);
      rows.forEach((cells, r) => {
        const want = expected[r]!;
        header!.forEach((col, c) => {
          const v = want[col];
          if (col === 'properties') assert.deepEqual(JSON.parse(cells[c]!), v);
          else assert.equal(cells[c], v === null || v === undefined ? '' : /^[=+\-@\t\r]/.test(String(v)) ? `'${String(v)}` : String(v), `${col} of row ${r}`);
        });
      });
    });
  }

  it('the formula-looking actor id is prefixed, the one with a comma and quotes is quoted', async () => {
    const csv = await exportOf('', 'text/csv');
    assert.ok(csv.includes(`,"'=HYPERLINK(""x"")",`), csv.slice(0, 400));
    assert.ok(csv.includes(`,"a,""b""",`));
  });

  it('a starter plan exports no account or license ids: no keys in NDJSON, empty cells in CSV', async () => {
    const starter = await tenantWithProduct(small.app, 'starter');
    const sent = event({ timestamp: '2026-06-01T12:00:00.000Z', account_id: 'acme', license_id: 'lic-1' });
    assert.equal((await postEvents(small.app, starter.ingestKey, [sent])).statusCode, 200);
    const headers = (accept: string) => ({ authorization: `Bearer ${starter.adminKey}`, accept });
    const nd = await small.app.inject({ method: 'GET', url: `/v1/events?${RANGE6}`, headers: headers('application/x-ndjson') });
    const line = JSON.parse(nd.body);
    assert.equal(line.event_id, sent.event_id);
    assert.equal('account_id' in line || 'license_id' in line, false);
    const csv = await small.app.inject({ method: 'GET', url: `/v1/events?${RANGE6}`, headers: headers('text/csv') });
    const [header, row] = parseCsv(csv.body);
    assert.equal(row![header!.indexOf('event_id')], sent.event_id);
    assert.equal(row![header!.indexOf('account_id')], '');
    assert.equal(row![header!.indexOf('license_id')], '');
  });

  it('an export after a cursor starts after that row; an export with nothing to say is the header alone', async () => {
    const first = (await get(small.app, k.adminKey, `/v1/events?${RANGE6}&limit=10`)).json();
    const all = await pages('');
    const lines = (await exportOf(`cursor=${first.next_cursor}`, 'application/x-ndjson')).trim().split('\n');
    assert.deepEqual(
      lines.map((l) => JSON.parse(l)),
      all.slice(10),
    );
    assert.equal(await exportOf('name=none', 'text/csv'), `${(await exportOf('', 'text/csv')).split('\r\n')[0]}\r\n`);
    assert.equal(await exportOf('name=none', 'application/x-ndjson'), '');
    const bad = await small.app.inject({
      method: 'GET',
      url: `/v1/events?${RANGE6}&cursor=nonsense`,
      headers: { authorization: `Bearer ${k.adminKey}`, accept: 'text/csv' },
    });
    assert.equal(bad.statusCode, 400, bad.body);
  });
});

describe('CSV on reports', () => {
  it('trends as CSV: one row per series and bucket, the echo in headers', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: `/v1/reports/trends?${RANGE}&breakdown=name`,
      headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' },
    });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /text\/csv/);
    assert.equal(res.headers['x-time-zone'], 'UTC');
    // open: e0 (Apr 1), e2 (Apr 3), e4 (Apr 2); save: e1 (Apr 2), e3 (Apr 1), e5 (Apr 3): one a day each.
    assert.deepEqual(res.body.trim().split('\r\n'), [
      'period,breakdown_value,other,date,events,actors',
      'current,open,false,2026-04-01,1,1',
      'current,open,false,2026-04-02,1,1',
      'current,open,false,2026-04-03,1,1',
      'current,save,false,2026-04-01,1,1',
      'current,save,false,2026-04-02,1,1',
      'current,save,false,2026-04-03,1,1',
    ]);
  });

  it('every report answers CSV', async () => {
    for (const url of ['/v1/reports/active-actors', '/v1/sessions', '/v1/sessions/stats', '/v1/sessions/release-health']) {
      const res = await t.app.inject({ method: 'GET', url: `${url}?${RANGE}`, headers: { authorization: `Bearer ${tenant.adminKey}`, accept: 'text/csv' } });
      assert.equal(res.statusCode, 200, url);
      assert.match(String(res.headers['content-type']), /text\/csv/, url);
    }
  });
});
