// Account and license endpoints over app.inject against a real store. The rollup job runs for real
// (foldReadModel, or startJobs(...).runOnce) instead of on its timer; the fixture's numbers are computed by hand.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rollupJob, type RollupOptions } from '../src/jobs/rollups.js';
import { startJobs } from '../src/jobs/runner.js';
import {
  ADMIN_TOKEN,
  createProduct,
  createTenant,
  event,
  foldReadModel,
  get,
  post,
  postEvents,
  SILENT_LOG,
  startTestApp,
  tenantWithProduct,
  type TestApp,
} from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const DAY = 86_400_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const refresh = (options: RollupOptions = {}) => foldReadModel(t.db, options);

async function fixture(options: RollupOptions = {}) {
  const tenant = await tenantWithProduct(t.app, 'business');
  const e = (actor: string, extra: Record<string, unknown>) => event({ actor_id: actor, timestamp: ago(3_600_000), ...extra });
  const res = await postEvents(t.app, tenant.ingestKey, [
    e('a1', { account_id: 'acme', license_id: 'L1', category: 'ui', name: 'click', product_version: '1.0' }),
    e('a1', { account_id: 'acme', license_id: 'L1', category: 'ui', name: 'click', product_version: '1.0' }),
    e('a1', { account_id: 'acme', license_id: 'L1', category: 'ui', name: 'save', product_version: '1.0' }),
    e('a2', { account_id: 'acme', license_id: 'L1', category: 'ui', name: 'click', product_version: '2.0' }),
    e('a2', { account_id: 'acme', license_id: 'L2', category: 'report', name: 'export', product_version: '2.0' }),
    e('a3', { account_id: 'acme', category: 'ui', name: 'open', product_version: '2.0', timestamp: ago(29 * DAY) }), // inside the window
    e('a4', { account_id: 'acme', category: 'ui', name: 'open', product_version: '2.0', timestamp: ago(31 * DAY) }), // outside
    e('g1', { account_id: 'globex', license_id: 'L9', category: 'ui', name: 'click', product_version: '2.0' }),
    e('x1', { category: 'ui', name: 'click', product_version: '2.0' }), // no account, no license
  ]);
  assert.equal(res.statusCode, 200);
  const headers = { authorization: `Bearer ${tenant.ingestKey}`, 'content-type': 'application/json' };
  const session = (id: string, extra: object) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/events/sessions',
      headers,
      payload: { session_id: id, actor_id: 'a1', product: 'app', product_version: '1.0', started_at: ago(3_600_000), ...extra },
    });
  assert.equal((await session('s1', { account_id: 'acme', license_id: 'L1' })).statusCode, 200);
  assert.equal((await session('s2', {})).statusCode, 200);
  for (const id of ['x1', 'x2']) {
    const r = await t.app.inject({
      method: 'POST',
      url: '/v1/events/exceptions',
      headers,
      payload: {
        exception_id: id,
        exception_type: 'TypeError',
        message: 'boom',
        stack_trace: 'TypeError: boom\n    at save (app.js:10:5)',
        severity: 'fatal',
        occurred_at: ago(1_800_000),
        actor_id: 'a1',
        product: 'app',
        product_version: '1.0',
        account_id: 'acme',
        license_id: 'L1',
      },
    });
    assert.equal(r.statusCode, 200, r.body);
  }
  await refresh(options);
  return tenant;
}

describe('accounts and licenses', () => {
  it('lists accounts with window counts, refreshed_at and window_days', async () => {
    const tenant = await fixture();
    const body = (await get(t.app, tenant.adminKey, '/v1/accounts')).json();
    assert.equal(body.window_days, 30);
    assert.ok(Date.parse(body.refreshed_at) <= Date.now());
    assert.equal(body.next_cursor, null);
    assert.deepEqual(
      body.data.map((a: { account_id: string }) => a.account_id),
      ['acme', 'globex'],
    );
    const acme = body.data[0];
    assert.equal(acme.events, 6, '5 recent + 1 at 29 days; the one at 31 days is outside');
    assert.equal(acme.active_actors, 3, 'a1, a2, a3: exact distinct');
    assert.equal(acme.licenses, 2);
    assert.equal(acme.sessions, 1);
    assert.equal(acme.exceptions, 2);
    assert.equal(acme.products, 1);
  });

  it('answers the account overview, features, actors, licenses, versions and exceptions', async () => {
    const tenant = await fixture();
    const o = (await get(t.app, tenant.adminKey, '/v1/accounts/acme')).json();
    assert.deepEqual(o.counts, { events: 6, sessions: 1, exceptions: 2, active_actors: 3, licenses: 2, products: 1 });
    assert.deepEqual(
      o.products.map((p: { product: string; events: number }) => [p.product, p.events]),
      [['app', 6]],
    );
    assert.deepEqual(
      o.versions.map((v: { source_version: string; events: number }) => [v.source_version, v.events]),
      [
        ['1.0', 3],
        ['2.0', 3],
      ],
    );
    assert.deepEqual(
      o.licenses.map((l: { license_id: string; events: number; active_actors: number }) => [l.license_id, l.events, l.active_actors]),
      [
        ['L1', 4, 2],
        ['L2', 1, 1],
      ],
    );
    assert.equal(o.recent_exceptions.length, 1);
    assert.equal(o.recent_exceptions[0].count, 2);
    assert.equal(o.recent_exceptions[0].exception_type, 'TypeError');

    const features = (await get(t.app, tenant.adminKey, '/v1/accounts/acme/features')).json();
    assert.deepEqual(
      features.data.map((f: { category: string; name: string; events: number }) => [f.category, f.name, f.events]),
      [
        ['ui', 'click', 3],
        ['report', 'export', 1],
        ['ui', 'open', 1],
        ['ui', 'save', 1],
      ],
    );
    assert.equal(features.next_cursor, null);
    // Paged like every list: the same rows, two at a time, ties (1 event each) by category and name.
    const featurePages: string[][] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page: { data: { name: string }[]; next_cursor: string | null } = (
        await get(t.app, tenant.adminKey, `/v1/accounts/acme/features?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      featurePages.push(page.data.map((f) => f.name));
      cursor = page.next_cursor;
    }
    assert.deepEqual(featurePages, [
      ['click', 'export'],
      ['open', 'save'],
    ]);

    const actors = (await get(t.app, tenant.adminKey, '/v1/accounts/acme/actors?limit=2')).json();
    assert.deepEqual(
      actors.data.map((a: { actor_id: string; events: number }) => [a.actor_id, a.events]),
      [
        ['a1', 3],
        ['a2', 2],
      ],
    );
    const rest = (await get(t.app, tenant.adminKey, `/v1/accounts/acme/actors?limit=2&cursor=${actors.next_cursor}`)).json();
    assert.deepEqual(
      rest.data.map((a: { actor_id: string }) => a.actor_id),
      ['a3'],
    );
    assert.equal(rest.next_cursor, null);

    const licenses = (await get(t.app, tenant.adminKey, '/v1/accounts/acme/licenses')).json();
    assert.deepEqual(
      licenses.data.map((l: { license_id: string }) => l.license_id),
      ['L1', 'L2'],
    );
    const versions = (await get(t.app, tenant.adminKey, '/v1/accounts/acme/versions')).json();
    assert.deepEqual(versions.data[0], { source_app: 'app', source_version: '1.0', events: 3, sessions: 1 });
    // Every list takes the one pagination (CONTRACT.md): limit and cursor, next_cursor null at the end.
    assert.equal(licenses.next_cursor, null);
    assert.equal(versions.next_cursor, null);
    const pages = async (path: string, id: (row: Record<string, string>) => string) => {
      const ids: string[] = [];
      let cursor: string | null = '';
      while (cursor !== null) {
        const res = await get(t.app, tenant.adminKey, `${path}?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(res.statusCode, 200, res.body);
        const body = res.json();
        assert.equal(body.data.length, 1);
        ids.push(id(body.data[0]));
        cursor = body.next_cursor;
      }
      return ids;
    };
    assert.deepEqual(await pages('/v1/accounts/acme/licenses', (l) => l.license_id!), ['L1', 'L2']);
    assert.deepEqual(await pages('/v1/accounts/acme/versions', (v) => `${v.source_app}@${v.source_version}`), ['app@1.0', 'app@2.0']);
    for (const path of ['/v1/accounts/acme/licenses', '/v1/accounts/acme/versions']) {
      const bad = await get(t.app, tenant.adminKey, `${path}?cursor=nonsense`);
      assert.equal(bad.statusCode, 400, path);
      assert.deepEqual(
        bad.json().errors.map((e: { field: string }) => e.field),
        ['cursor'],
      );
    }
    const exceptions = (await get(t.app, tenant.adminKey, '/v1/accounts/acme/exceptions')).json();
    assert.equal(exceptions.data.length, 1);
    assert.equal(exceptions.data[0].affected_actors, 1);
    assert.deepEqual(exceptions.data[0].versions, ['1.0']);
    // The account is the path's: another in the query is an unknown parameter, not silently dropped.
    const other = await get(t.app, tenant.adminKey, '/v1/accounts/acme/exceptions?account_id=globex');
    assert.deepEqual([other.statusCode, other.json().code, other.json().errors?.[0]?.field], [400, 'validation_error', 'account_id']);
  });

  it('lists licenses and answers one license detail', async () => {
    const tenant = await fixture();
    const list = (await get(t.app, tenant.adminKey, '/v1/licenses')).json();
    assert.deepEqual(
      list.data.map((l: { license_id: string; events: number; accounts: number }) => [l.license_id, l.events, l.accounts]),
      [
        ['L1', 4, 1],
        ['L2', 1, 1],
        ['L9', 1, 1],
      ],
    );
    const l1 = (await get(t.app, tenant.adminKey, '/v1/licenses/L1')).json();
    assert.deepEqual(
      l1.accounts.map((a: { account_id: string }) => a.account_id),
      ['acme'],
    );
    assert.equal(l1.active_actors, 2);
    assert.equal(l1.counts.sessions, 1);
    assert.equal(l1.counts.exceptions, 2);
    assert.deepEqual(
      l1.products.map((p: { product: string }) => p.product),
      ['app'],
    );
    assert.ok(l1.recent_activity.length >= 1);
    assert.equal(
      l1.recent_activity.reduce((n: number, d: { events: number }) => n + d.events, 0),
      4,
    );
  });

  it("one account's or license's lists are built into its snapshot at refresh, equal to the read model's, and rebuilt by the next refresh", async () => {
    // Lists are built from DETAIL_MIN_ROWS usage rows on; this fixture's accounts have a few, so
    // the threshold is 0 here, and the default below.
    const tenant = await fixture({ detailMinRows: 0 });
    const paths = ['/v1/accounts/acme', '/v1/accounts/acme/licenses', '/v1/accounts/acme/versions', '/v1/licenses/L1', '/v1/licenses/L2'];
    const answers = async () => Promise.all(paths.map(async (p) => (await get(t.app, tenant.adminKey, p)).json()));
    const built = await answers();
    const missing = async () =>
      Number(
        (
          await t.db.query<{ n: number }>(
            'SELECT (SELECT count(*) FROM ru_accounts WHERE tenant_id = $1 AND detail IS NULL) + (SELECT count(*) FROM ru_licenses WHERE tenant_id = $1 AND detail IS NULL) AS n',
            [tenant.id],
          )
        )[0]!.n,
      );
    assert.equal(await missing(), 0, 'every snapshot row has its lists');
    // Without the built lists (a small account, or a snapshot refreshed before migration 090) they
    // are grouped live from the read model: the same answers, first and last seen included.
    for (const table of ['ru_accounts', 'ru_licenses']) await t.db.query(`UPDATE ${table} SET detail = NULL WHERE tenant_id = $1`, [tenant.id]);
    assert.deepEqual(await answers(), built);

    const versions = async () =>
      (await get(t.app, tenant.adminKey, '/v1/accounts/acme'))
        .json()
        .versions.map((v: { source_version: string; events: number }) => [v.source_version, v.events]);
    const send = async (version: string) =>
      assert.equal(
        (
          await postEvents(t.app, tenant.ingestKey, [
            event({ actor_id: 'a5', account_id: 'acme', license_id: 'L2', product_version: version, timestamp: ago(60_000) }),
          ])
        ).statusCode,
        200,
      );
    // The default threshold: nothing built, every list live.
    await send('3.0');
    await refresh();
    assert.equal(await missing(), 5, 'none of 2 accounts and 3 licenses built');
    assert.deepEqual(await versions(), [
      ['1.0', 3],
      ['2.0', 3],
      ['3.0', 1],
    ]);
    // Built lists are as of the refresh, like the counts beside them.
    await send('4.0');
    await refresh({ detailMinRows: 0 });
    assert.equal(await missing(), 0, 'the refresh rebuilt the lists');
    await send('5.0');
    assert.deepEqual(await versions(), [
      ['1.0', 3],
      ['2.0', 3],
      ['3.0', 1],
      ['4.0', 1],
    ]);
    const l2 = (await get(t.app, tenant.adminKey, '/v1/licenses/L2')).json();
    assert.deepEqual(
      [l2.active_actors, l2.accounts[0].active_actors, l2.recent_activity.reduce((n: number, d: { events: number }) => n + d.events, 0)],
      [2, 2, 3],
    );
  });

  it('reports coverage, missing sources and cardinality warnings', async () => {
    const tenant = await fixture();
    const c = (await get(t.app, tenant.adminKey, '/v1/accounts/coverage')).json();
    assert.deepEqual(c.events, { total: 8, with_account: 7, with_license: 6, account_pct: 87.5, license_pct: 75 });
    assert.deepEqual(c.sessions, { total: 2, with_account: 1, with_license: 1, account_pct: 50, license_pct: 50 });
    assert.equal(c.exceptions.total, 2);
    assert.deepEqual(c.top_missing_sources[0], { product: 'app', product_version: '2.0', events: 5, missing_account: 1, missing_license: 2 });
    // 3 licenses (L1, L2, L9) for 3 actors with a license (a1, a2, g1): they look per-user.
    assert.ok(c.warnings.some((w: { type: string }) => w.type === 'licenses_look_per_user'));
  });

  it("coverage's warnings count the window's distinct licenses, actors and accounts by hand", async () => {
    // A day ago: a1 (account A) and a2 (account B) with license L1; c1 in account C with 51
    // licenses. 40 days ago, outside the 30-day window: o1 with license L7, L1 under account D, a0 in A.
    // In the window: 52 licenses (L1, C-1 … C-51) for 3 actors (a1, a2, c1): they look per user;
    // L1 under 2 accounts (A, B; D is outside); C with 51 licenses, past the limit of 50.
    const tenant = await tenantWithProduct(t.app, 'business');
    const e = (actor: string, account: string, license: string, at: number) =>
      event({ actor_id: actor, account_id: account, license_id: license, timestamp: ago(at) });
    const batch = [
      e('a1', 'A', 'L1', DAY),
      e('a2', 'B', 'L1', DAY),
      ...Array.from({ length: 51 }, (_, i) => e('c1', 'C', `C-${i + 1}`, DAY)),
      e('o1', 'A', 'L7', 40 * DAY),
      e('o1', 'D', 'L1', 40 * DAY),
      e('a0', 'A', 'L0', 40 * DAY),
    ];
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    await refresh();
    const c = (await get(t.app, tenant.adminKey, '/v1/accounts/coverage')).json();
    const warning = (type: string) => c.warnings.filter((w: { type: string }) => w.type === type).map(({ message: _m, ...w }: { message: string }) => w);
    assert.deepEqual(warning('licenses_look_per_user'), [{ type: 'licenses_look_per_user', distinct_licenses: 52, distinct_actors: 3 }]);
    assert.deepEqual(warning('license_in_several_accounts'), [{ type: 'license_in_several_accounts', license_id: 'L1', accounts: 2 }]);
    assert.deepEqual(warning('account_with_many_licenses'), [{ type: 'account_with_many_licenses', account_id: 'C', licenses: 51 }]);
    assert.deepEqual(c.events, { total: 53, with_account: 53, with_license: 53, account_pct: 100, license_pct: 100 });
    // Built at the refresh: a tenant refreshed before migration 200 (none built) gets the same answer
    // live, and the next refresh rebuilds it with what was folded since.
    await t.db.query('UPDATE tenant_rollups SET coverage = NULL WHERE tenant_id = $1', [tenant.id]);
    assert.deepEqual((await get(t.app, tenant.adminKey, '/v1/accounts/coverage')).json(), c);
    await postEvents(t.app, tenant.ingestKey, [event({ actor_id: 'n1', timestamp: ago(DAY) })]);
    await refresh();
    const next = (await get(t.app, tenant.adminKey, '/v1/accounts/coverage')).json();
    assert.deepEqual(next.events, { total: 54, with_account: 53, with_license: 53, account_pct: 98.15, license_pct: 98.15 });
    assert.deepEqual(next.top_missing_sources, [{ product: 'app', product_version: '1.0.0', events: 54, missing_account: 1, missing_license: 1 }]);
    // Account A's actors in the window: a1 alone (a0 and o1 came 40 days ago), one to a page.
    const actors = (await get(t.app, tenant.adminKey, '/v1/accounts/A/actors?limit=1')).json();
    assert.deepEqual([actors.data.map((a: { actor_id: string }) => a.actor_id), actors.next_cursor], [['a1'], null]);
  });

  it('folds each row exactly once across refreshes (incremental)', async () => {
    const tenant = await fixture();
    await refresh(); // nothing new: nothing counted twice
    await postEvents(t.app, tenant.ingestKey, [event({ actor_id: 'a9', account_id: 'acme', timestamp: ago(60_000) })]);
    await refresh();
    const acme = (await get(t.app, tenant.adminKey, '/v1/accounts/acme')).json();
    assert.equal(acme.counts.events, 7);
    assert.equal(acme.counts.active_actors, 4);
  });

  it(
    'a transaction still open during a fold is folded once it commits, exactly once; it never stalls the others',
    { skip: process.env.TEST_DATABASE_URL ? false : 'needs concurrent connections (PostgreSQL)' },
    async () => {
      const tenant = await tenantWithProduct(t.app, 'business');
      let commit!: () => void;
      const gate = new Promise<void>((r) => (commit = r));
      let inserted!: () => void;
      const wrote = new Promise<void>((r) => (inserted = r));
      // An ingest transaction that has written its row but not committed yet.
      const slow = t.db.tx(async (q) => {
        await q.query(
          `INSERT INTO events (tenant_id, event_id, product_id, product_version, category, name, occurred_at, received_at, actor_id, account_id)
           VALUES ($1, gen_random_uuid(), $2, '1', 'ui', 'click', now(), now(), 'slow-actor', 'slow')`,
          [tenant.id, tenant.productId],
        );
        inserted();
        await gate;
      });
      await wrote;
      await postEvents(t.app, tenant.ingestKey, [event({ account_id: 'fast', timestamp: ago(60_000) })]);
      await refresh();
      const accounts = async () =>
        (await get(t.app, tenant.adminKey, '/v1/accounts')).json().data.map((a: { account_id: string; events: number }) => [a.account_id, a.events]);
      assert.deepEqual(await accounts(), [['fast', 1]], 'the open transaction does not hold the others back');
      commit();
      await slow;
      await refresh();
      await refresh();
      assert.deepEqual(await accounts(), [
        ['fast', 1],
        ['slow', 1],
      ]);
    },
  );

  it('paginates the account list stably', async () => {
    const tenant = await tenantWithProduct(t.app, 'enterprise');
    await postEvents(
      t.app,
      tenant.ingestKey,
      Array.from({ length: 7 }, (_, i) => event({ account_id: `acct-${i}`, timestamp: ago(60_000) })),
    );
    await refresh();
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { account_id: string }[]; next_cursor: string | null } = (
        await get(t.app, tenant.adminKey, `/v1/accounts?limit=3${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      seen.push(...page.data.map((a) => a.account_id));
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(
      seen,
      Array.from({ length: 7 }, (_, i) => `acct-${i}`),
    );
  });

  it('a fold in slices of one transaction each counts every row once, and rows that arrive between runs are folded by the next', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const batch = (n: number) => Array.from({ length: n }, (_, i) => event({ actor_id: `s${i % 3}`, account_id: 'sliced', timestamp: ago(3_600_000) }));
    await refresh(); // what earlier tests left, folded first
    // Slices one transaction id wide (a budget of 0 ms never lets them widen): each batch is a slice of its own.
    const jobs = startJobs(t.db, [rollupJob(60, { sliceMs: 0, initialWidth: 1 })], SILENT_LOG);
    for (const n of [3, 4, 5]) assert.equal((await postEvents(t.app, tenant.ingestKey, batch(n))).statusCode, 200);
    assert.equal(await jobs.runOnce('rollups'), true);
    const first = (await get(t.app, tenant.adminKey, '/v1/accounts/sliced')).json();
    assert.equal(first.counts.events, 12);
    assert.equal(first.counts.active_actors, 3);
    for (const n of [6, 7]) assert.equal((await postEvents(t.app, tenant.ingestKey, batch(n))).statusCode, 200);
    assert.equal(await jobs.runOnce('rollups'), true);
    assert.equal(await jobs.runOnce('rollups'), true); // nothing new: nothing counted twice
    await jobs.stop();
    assert.equal((await get(t.app, tenant.adminKey, '/v1/accounts/sliced')).json().counts.events, 25);
  });

  it('the window ends on the refresh’s day: records stamped later count when their day comes, not before', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const later = (days: number) => new Date(Date.now() + days * DAY).toISOString();
    const e = (actor: string, timestamp: string, extra: Record<string, unknown>) => event({ actor_id: actor, timestamp, product_version: '1.0', ...extra });
    const now = ago(3_600_000);
    assert.equal(
      (
        await postEvents(t.app, tenant.ingestKey, [
          e('a1', now, { account_id: 'acme', license_id: 'L1', name: 'click' }),
          e('a2', later(3), { account_id: 'acme', license_id: 'L-later', name: 'save' }), // acme's, three days ahead
          e('a3', later(10), { account_id: 'ahead', license_id: 'L-ahead', name: 'click' }), // only ahead
        ])
      ).statusCode,
      200,
    );
    const exception = (id: string, occurred_at: string) =>
      post(t.app, tenant.ingestKey, '/v1/events/exceptions', {
        exception_id: id,
        exception_type: id,
        message: id,
        severity: 'fatal',
        occurred_at,
        actor_id: 'a1',
        product: 'app',
        product_version: '1.0',
        account_id: 'acme',
      });
    assert.equal((await exception('NowError', now)).statusCode, 200);
    assert.equal((await exception('LaterError', later(2))).statusCode, 200);
    await refresh();
    const list = (await get(t.app, tenant.adminKey, '/v1/accounts')).json();
    assert.deepEqual(
      list.data.map((a: { account_id: string; events: number; active_actors: number; licenses: number }) => [
        a.account_id,
        a.events,
        a.active_actors,
        a.licenses,
      ]),
      [['acme', 1, 1, 1]],
    );
    const acme = (await get(t.app, tenant.adminKey, '/v1/accounts/acme')).json();
    assert.deepEqual([acme.counts.events, acme.counts.exceptions, acme.last_seen], [1, 1, now]);
    assert.deepEqual(
      acme.licenses.map((l: { license_id: string }) => l.license_id),
      ['L1'],
    );
    assert.deepEqual(
      acme.recent_exceptions.map((g: { exception_type: string }) => g.exception_type),
      ['NowError'],
    );
    assert.deepEqual(
      (await get(t.app, tenant.adminKey, '/v1/accounts/acme/actors')).json().data.map((a: { actor_id: string }) => a.actor_id),
      ['a1'],
    );
    assert.deepEqual(
      (await get(t.app, tenant.adminKey, '/v1/accounts/acme/features')).json().data.map((f: { name: string }) => f.name),
      ['click'],
    );
    for (const url of ['/v1/accounts/ahead', '/v1/licenses/L-ahead', '/v1/licenses/L-later'])
      assert.equal((await get(t.app, tenant.adminKey, url)).statusCode, 404, url);
    const c = (await get(t.app, tenant.adminKey, '/v1/accounts/coverage')).json();
    assert.deepEqual([c.events.total, c.exceptions.total], [1, 1]);
  });

  it("an unknown account or license, or another tenant's, is 404", async () => {
    const a = await fixture();
    const b = await tenantWithProduct(t.app, 'business');
    for (const url of [
      '/v1/accounts/acme',
      '/v1/accounts/acme/features',
      '/v1/accounts/acme/actors',
      '/v1/accounts/acme/licenses',
      '/v1/accounts/acme/versions',
      '/v1/accounts/acme/exceptions',
      '/v1/licenses/L1',
    ]) {
      const foreign = await get(t.app, b.adminKey, url);
      const missing = await get(t.app, a.adminKey, url.replace('acme', 'nobody').replace('L1', 'nolicense'));
      assert.equal(foreign.statusCode, 404, url);
      assert.equal(missing.statusCode, 404, url);
      assert.equal(foreign.json().code, missing.json().code);
    }
    assert.deepEqual((await get(t.app, b.adminKey, '/v1/accounts')).json().data, []);
  });

  it('BAD-INPUTS 36: plan gating: 403 forbidden without view_accounts comes before 402 plan_limit_reached; Trial, Business and Enterprise see the endpoints', async () => {
    for (const plan of ['starter', 'pro'] as const) {
      const tenant = await createTenant(t.app, plan);
      const res = await get(t.app, tenant.adminKey, '/v1/accounts');
      assert.equal(res.statusCode, 402, plan);
      assert.equal(res.json().code, 'plan_limit_reached');
      assert.equal((await get(t.app, tenant.ingestKey, '/v1/accounts')).statusCode, 403, 'the permission is checked first');
      assert.equal((await get(t.app, tenant.adminKey, '/v1/accounts/coverage')).statusCode, 402);
      assert.equal((await get(t.app, tenant.adminKey, '/v1/licenses')).statusCode, 402);
    }
    for (const plan of ['trial', 'business', 'enterprise'] as const) {
      const tenant = await createTenant(t.app, plan);
      assert.equal((await get(t.app, tenant.adminKey, '/v1/accounts')).statusCode, 200, plan);
      assert.equal((await get(t.app, tenant.ingestKey, '/v1/accounts')).statusCode, 403, plan);
    }
  });

  it('account_context_enabled off hides the endpoints; an upgrade shows data stored before it', async () => {
    const tenant = await tenantWithProduct(t.app, 'pro');
    await postEvents(t.app, tenant.ingestKey, [event({ account_id: 'early', timestamp: ago(60_000) })]);
    await refresh();
    assert.equal((await get(t.app, tenant.adminKey, '/v1/accounts')).statusCode, 402);
    await t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/tenants/${tenant.id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { plan: 'business', account_context_enabled: true },
    });
    assert.deepEqual(
      (await get(t.app, tenant.adminKey, '/v1/accounts')).json().data.map((a: { account_id: string }) => a.account_id),
      ['early'],
    );
    await t.app.inject({
      method: 'PATCH',
      url: `/admin/v1/tenants/${tenant.id}`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { account_context_enabled: false },
    });
    const off = await get(t.app, tenant.adminKey, '/v1/accounts');
    assert.equal(off.statusCode, 403);
    assert.equal(off.json().code, 'account_context_disabled');
  });
});

describe('GET /v1/exceptions', () => {
  it('groups by fingerprint with filters: product, version (latest too), severity, time, account, license', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    await createProduct(t.app, tenant.adminKey, 'other');
    const headers = { authorization: `Bearer ${tenant.ingestKey}`, 'content-type': 'application/json' };
    const send = (id: string, extra: object) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/events/exceptions',
        headers,
        payload: {
          exception_id: id,
          exception_type: 'E',
          severity: 'non_fatal',
          occurred_at: ago(60_000),
          actor_id: 'u1',
          product: 'app',
          product_version: '1.0.0',
          ...extra,
        },
      });
    await send('e1', { message: 'one 1' });
    await send('e2', { message: 'one 2', actor_id: 'u2', product_version: '1.2.0', account_id: 'acme' });
    await send('e3', { exception_type: 'F', severity: 'fatal', license_id: 'L1' });
    await send('e4', { exception_type: 'G', product: 'other', occurred_at: ago(10 * DAY) });
    const q = async (qs: string) => (await get(t.app, tenant.adminKey, `/v1/exceptions${qs}`)).json();
    const all = await q('');
    assert.equal(all.data.length, 3);
    const e = all.data.find((g: { exception_type: string }) => g.exception_type === 'E');
    assert.equal(e.count, 2);
    assert.equal(e.affected_actors, 2);
    assert.deepEqual(e.versions, ['1.0.0', '1.2.0']);
    assert.equal((await q('?product=app')).data.length, 2);
    assert.equal((await q('?product=app&version=latest')).data.length, 1);
    assert.equal((await q('?severity=fatal')).data[0].exception_type, 'F');
    assert.equal((await q(`?since=${encodeURIComponent(ago(DAY))}`)).data.length, 2);
    assert.equal((await q('?account_id=acme')).data[0].count, 1);
    assert.equal((await q('?license_id=L1')).data[0].exception_type, 'F');
    const first = await q('?limit=2');
    assert.equal(first.data.length, 2);
    const second = await q(`?limit=2&cursor=${first.next_cursor}`);
    assert.equal(second.data.length, 1);
    assert.equal(second.next_cursor, null);
    assert.equal((await get(t.app, tenant.adminKey, '/v1/exceptions?version=latest')).statusCode, 400);
  });

  it("takes the query side's common range, tz and interval, and echoes them with refreshed_at (CONTRACT.md)", async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const send = (id: string, occurredAt: string) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/events/exceptions',
        headers: { authorization: `Bearer ${tenant.ingestKey}`, 'content-type': 'application/json' },
        payload: { exception_id: id, exception_type: id, severity: 'fatal', occurred_at: occurredAt, actor_id: 'u1', product: 'app', product_version: '1.0.0' },
      });
    await send('recent', ago(DAY));
    await send('older', ago(10 * DAY));
    const list = async (qs: string) => {
      const res = await get(t.app, tenant.adminKey, `/v1/exceptions${qs}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    };
    const week = await list('?range=7d&tz=Europe/Berlin&interval=week');
    assert.deepEqual(
      week.data.map((g: { exception_type: string }) => g.exception_type),
      ['recent'],
    );
    assert.equal(week.tz, 'Europe/Berlin');
    assert.equal(week.interval, 'week');
    assert.equal(week.refreshed_at, null, 'the rollup job has not run for this tenant');
    assert.ok(Date.parse(week.range.to) - Date.parse(week.range.from) > 6 * DAY);
    const day = (ms: number) => ago(ms).slice(0, 10);
    const bounded = await list(`?from=${day(12 * DAY)}&to=${day(5 * DAY)}`);
    assert.deepEqual(
      bounded.data.map((g: { exception_type: string }) => g.exception_type),
      ['older'],
    );
    assert.equal(bounded.range.from, `${day(12 * DAY)}T00:00:00.000Z`);
    assert.equal(bounded.tz, 'UTC');
    // Without a range the list stays the whole history (docs/accounts.md), and says so.
    const whole = await list('');
    assert.equal(whole.data.length, 2);
    assert.equal(whole.range.from, '1970-01-01T00:00:00.000Z');
    const fiveDaysAgo = ago(5 * DAY);
    const since = await list(`?since=${encodeURIComponent(fiveDaysAgo)}`);
    assert.equal(since.data.length, 1);
    assert.equal(since.range.from, fiveDaysAgo);
    const bad = async (qs: string, field: string) => {
      const res = await get(t.app, tenant.adminKey, `/v1/exceptions${qs}`);
      assert.equal(res.statusCode, 400, qs);
      assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
      assert.ok(
        res.json().errors.some((e: { field: string }) => e.field === field),
        `${qs}: ${res.body}`,
      );
    };
    await bad('?range=7d&since=2026-01-01T00:00:00Z', 'since');
    await bad('?tz=Mars/Base', 'tz');
    await bad('?interval=year', 'interval');
    await bad('?from=2026-02-30', 'from');
    // since/until as from/to: an empty or inverted window names its end; a since past now names since.
    await bad('?since=2026-11-28T00:00:00Z&until=2026-11-01T00:00:00Z', 'until');
    await bad('?since=2026-11-01T00:00:00Z&until=2026-11-01T00:00:00Z', 'until');
    await bad(`?since=${encodeURIComponent(new Date(Date.now() + DAY).toISOString())}`, 'since');
  });

  it('an account or license filter needs view_accounts, like every per-account answer', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const issued = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/tenants/${tenant.id}/keys`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { name: 'reader', permissions: ['read'] },
    });
    const reader = issued.json().key;
    assert.equal((await get(t.app, reader, '/v1/exceptions')).statusCode, 200);
    for (const qs of ['?account_id=acme', '?license_id=L1']) {
      const res = await get(t.app, reader, `/v1/exceptions${qs}`);
      assert.equal(res.statusCode, 403, qs);
      assert.equal(res.json().code, 'forbidden');
    }
  });
});
