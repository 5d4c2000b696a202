// The versions, accounts-over-time and environment reports over app.inject against a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL); the rollup job runs once for real; nothing is faked. Right answers worked out by hand in the comments.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, createTenant, event, foldReadModel, get, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
let key: string;
let tenantId: string;
const env = (data: object) => ({ headers: { 'x-environment-data': Buffer.from(JSON.stringify(data)).toString('base64') } });

// 1.0 (released 2026-05-01, archived after the events), 2.0 (released 2026-05-11). UTC:
//   u1 (account A): 1.0 May 10 10:00, 2.0 May 12 10:00    environment os_name Windows
//   u2 (account B): 1.0 May 10 11:00, 1.0 May 12 11:00    environment os_name macOS
//   u3 (no account): 2.0 May 11 09:00                      no environment
const registerVersion = (adminKey: string, v: string, release_date: string) =>
  t.app.inject({
    method: 'POST',
    url: '/v1/version-registrations',
    headers: { authorization: `Bearer ${adminKey}` },
    payload: { product: 'app', product_version: v, release_date },
  });
async function archiveVersion(adminKey: string, productId: string, v: string): Promise<void> {
  const versions = (await get(t.app, adminKey, `/v1/products/${productId}/versions`)).json().data as { id: string; product_version: string }[];
  const patch = await t.app.inject({
    method: 'PATCH',
    url: `/v1/products/${productId}/versions/${versions.find((x) => x.product_version === v)!.id}`,
    headers: { authorization: `Bearer ${adminKey}` },
    payload: { status: 'archived' },
  });
  assert.equal(patch.statusCode, 200, patch.body);
}
/** A business tenant with 1.0 (released 2026-05-01) and 2.0 (released 2026-05-11) registered. */
async function tenantWithVersions() {
  const tenant = await tenantWithProduct(t.app, 'business');
  assert.equal((await registerVersion(tenant.adminKey, '1.0', '2026-05-01')).statusCode, 201);
  assert.equal((await registerVersion(tenant.adminKey, '2.0', '2026-05-11')).statusCode, 201);
  return tenant;
}
const fold = () => foldReadModel(t.db);
const e = (actor: string, v: string, timestamp: string, account?: string) =>
  event({ actor_id: actor, product_version: v, timestamp, ...(account ? { account_id: account } : {}) });

before(async () => {
  t = await startTestApp();
  const tenant = await tenantWithVersions();
  key = tenant.adminKey;
  tenantId = tenant.id;
  assert.equal(
    (
      await postEvents(
        t.app,
        tenant.ingestKey,
        [e('u1', '1.0', '2026-05-10T10:00:00Z', 'A'), e('u1', '2.0', '2026-05-12T10:00:00Z', 'A')],
        env({ os_name: 'Windows' }),
      )
    ).statusCode,
    200,
  );
  assert.equal(
    (
      await postEvents(
        t.app,
        tenant.ingestKey,
        [e('u2', '1.0', '2026-05-10T11:00:00Z', 'B'), e('u2', '1.0', '2026-05-12T11:00:00Z', 'B')],
        env({ os_name: 'macOS' }),
      )
    ).statusCode,
    200,
  );
  assert.equal((await postEvents(t.app, tenant.ingestKey, [e('u3', '2.0', '2026-05-11T09:00:00Z')])).statusCode, 200);
  await archiveVersion(key, tenant.productId, '1.0');
  await fold();
});
after(async () => t.close());

const RANGE = 'from=2026-05-10&to=2026-05-13';
async function ok(url: string, k = key) {
  const res = await get(t.app, k, url);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

describe('compare=previous on the versions and accounts-over-time reports', () => {
  it('answers the previous period of the same length under compare, with its range', async () => {
    // May 12 against May 11. May 12: u2 on 1.0 (account B), u1 on 2.0 (A); May 11: u3 on 2.0, no account.
    const prevRange = { from: '2026-05-11T00:00:00.000Z', to: '2026-05-12T00:00:00.000Z' };
    const versions = await ok('/v1/reports/versions?product=app&from=2026-05-12&to=2026-05-13&compare=previous');
    assert.deepEqual(versions.adoption, [
      { date: '2026-05-12', version: '1.0', actors: 1 },
      { date: '2026-05-12', version: '2.0', actors: 1 },
    ]);
    assert.equal(versions.share_on_latest, 50);
    assert.deepEqual(versions.compare.range, prevRange);
    assert.deepEqual(versions.compare.adoption, [{ date: '2026-05-11', version: '2.0', actors: 1 }]);
    assert.equal(versions.compare.share_on_latest, 100);
    const accounts = await ok('/v1/reports/accounts?from=2026-05-12&to=2026-05-13&compare=previous');
    const rows = (b: { data: { date: string; accounts: number; licenses: number }[] }) => b.data.map((d) => [d.date, d.accounts, d.licenses]);
    assert.deepEqual(rows(accounts), [['2026-05-12', 2, 0]]);
    assert.deepEqual(accounts.compare.range, prevRange);
    assert.deepEqual(rows(accounts.compare), [['2026-05-11', 0, 0]]);
  });
});

describe('GET /v1/reports/versions', () => {
  it('adoption per day, share on the latest, upgrade lag, accounts on archived versions', async () => {
    const body = await ok(`/v1/reports/versions?product=app&${RANGE}`);
    // May 10: 1.0 by u1, u2. May 11: 2.0 by u3. May 12: 1.0 by u2, 2.0 by u1.
    assert.deepEqual(body.adoption, [
      { date: '2026-05-10', version: '1.0', actors: 2 },
      { date: '2026-05-11', version: '2.0', actors: 1 },
      { date: '2026-05-12', version: '1.0', actors: 1 },
      { date: '2026-05-12', version: '2.0', actors: 1 },
    ]);
    // Last versions: u1 2.0, u2 1.0, u3 2.0 → 2 of 3 on the latest (2.0).
    assert.equal(body.latest_version, '2.0');
    assert.equal(body.share_on_latest, 66.6667);
    // 2.0 released May 11; account A first ran it May 12: 1 day. 1.0 released May 1; A and B first ran it May 10: 9 days.
    assert.deepEqual(body.upgrade_lag, [
      { version: '2.0', released_on: '2026-05-11', accounts: 1, median_lag_days: 1, p90_lag_days: 1 },
      { version: '1.0', released_on: '2026-05-01', accounts: 2, median_lag_days: 9, p90_lag_days: 9 },
    ]);
    // A's last activity was on 2.0; B's on 1.0, archived.
    assert.deepEqual(body.archived_accounts, [{ account_id: 'B', version: '1.0', actors: 1, last_seen: '2026-05-12T11:00:00.000Z' }]);
  });

  it('a version no account has run has no upgrade lag (null, not 0); an hourly interval is a 400', async () => {
    const other = await tenantWithVersions();
    const body = await ok(`/v1/reports/versions?product=app&${RANGE}`, other.adminKey);
    assert.deepEqual(body.upgrade_lag, [
      { version: '2.0', released_on: '2026-05-11', accounts: 0, median_lag_days: null, p90_lag_days: null },
      { version: '1.0', released_on: '2026-05-01', accounts: 0, median_lag_days: null, p90_lag_days: null },
    ]);
    const hourly = await get(t.app, other.adminKey, `/v1/reports/versions?product=app&${RANGE}&interval=hour`);
    assert.equal(hourly.statusCode, 400, hourly.body);
    assert.equal(hourly.json().errors[0].field, 'interval');
  });

  it('accounts on archived versions go by each account’s own last activity, whatever its actors did elsewhere', async () => {
    // Another tenant; an actor counts under the version it ended each day on. Account C: w1 on 2.0 May 10,
    // 1.0 May 11; w2 on 1.0 May 12 12:00 → C's last activity is on 1.0 (archived), run there by w1 and w2.
    // Account D: w2 on 2.0 May 12 09:00 → D's last is 2.0, though w2's own last activity (in C) is on 1.0.
    const other = await tenantWithVersions();
    const batch = [
      e('w1', '2.0', '2026-05-10T10:00:00Z', 'C'),
      e('w1', '1.0', '2026-05-11T09:00:00Z', 'C'),
      e('w2', '2.0', '2026-05-12T09:00:00Z', 'D'),
      e('w2', '1.0', '2026-05-12T12:00:00Z', 'C'),
    ];
    assert.equal((await postEvents(t.app, other.ingestKey, batch)).statusCode, 200);
    await archiveVersion(other.adminKey, other.productId, '1.0');
    await fold();
    const body = await ok(`/v1/reports/versions?product=app&${RANGE}`, other.adminKey);
    assert.deepEqual(body.archived_accounts, [{ account_id: 'C', version: '1.0', actors: 2, last_seen: '2026-05-12T12:00:00.000Z' }]);
    // w1 ends on 1.0 (May 11), w2 on 1.0 (May 12 12:00): neither on the latest.
    assert.equal(body.share_on_latest, 0);
  });

  it("an account's last version at a tie of instants is the greater in C order, whichever version is archived", async () => {
    // Another tenant. Account C: w1 on 1.0 and w2 on 2.0 at the same instant; account D the same with the versions
    // the other way round between its actors. Each ends on 2.0 (greater), so neither runs 1.0, archived, then.
    const other = await tenantWithVersions();
    const at = '2026-05-12T10:00:00Z';
    const batch = [e('w1', '1.0', at, 'C'), e('w2', '2.0', at, 'C'), e('w3', '2.0', at, 'D'), e('w4', '1.0', at, 'D')];
    assert.equal((await postEvents(t.app, other.ingestKey, batch)).statusCode, 200);
    await archiveVersion(other.adminKey, other.productId, '1.0');
    await fold();
    assert.deepEqual((await ok(`/v1/reports/versions?product=app&${RANGE}`, other.adminKey)).archived_accounts, []);
    // 2.0 archived instead: both accounts are on it, each with the one actor that ran it.
    await archiveVersion(other.adminKey, other.productId, '2.0');
    const body = await ok(`/v1/reports/versions?product=app&${RANGE}`, other.adminKey);
    assert.deepEqual(body.archived_accounts, [
      { account_id: 'C', version: '2.0', actors: 1, last_seen: '2026-05-12T10:00:00.000Z' },
      { account_id: 'D', version: '2.0', actors: 1, last_seen: '2026-05-12T10:00:00.000Z' },
    ]);
  });

  it("upgrade lag counts an account's first day with any event on a version, not only a day's last version", async () => {
    // Another tenant. Account C: w1 runs 1.0 at 10:00 and 2.0 at 12:00 on May 12 (the day ends on 2.0); account D: w2
    // runs 1.0 on May 14. 2.0 (released May 11): C from May 12, 1 day. 1.0 (released May 1): C from May 12 (11 days),
    // D from May 14 (13 days): median 12, p90 11 + 0.9 × 2 = 12.8.
    const other = await tenantWithVersions();
    const batch = [e('w1', '1.0', '2026-05-12T10:00:00Z', 'C'), e('w1', '2.0', '2026-05-12T12:00:00Z', 'C'), e('w2', '1.0', '2026-05-14T09:00:00Z', 'D')];
    assert.equal((await postEvents(t.app, other.ingestKey, batch)).statusCode, 200);
    await fold();
    // The lag is over all time: a range that holds none of these days answers the same.
    for (const range of [RANGE, 'from=2026-06-01&to=2026-06-02']) {
      const body = await ok(`/v1/reports/versions?product=app&${range}`, other.adminKey);
      assert.deepEqual(body.upgrade_lag, [
        { version: '2.0', released_on: '2026-05-11', accounts: 1, median_lag_days: 1, p90_lag_days: 1 },
        { version: '1.0', released_on: '2026-05-01', accounts: 2, median_lag_days: 12, p90_lag_days: 12.8 },
      ]);
    }
  });

  it('answers a range of more than 63 days as the short range, per week and per day', async () => {
    // Past 63 buckets each (actor, version) keeps an array of its buckets, not a bigint's bits.
    const long = await ok('/v1/reports/versions?product=app&from=2026-02-01&to=2026-05-20');
    const short = await ok(`/v1/reports/versions?product=app&${RANGE}`);
    assert.deepEqual([long.adoption, long.share_on_latest, long.archived_accounts], [short.adoption, short.share_on_latest, short.archived_accounts]);
    // Week of May 4 (May 10): 1.0 by u1, u2; week of May 11: 2.0 by u3, u1; 1.0 by u2.
    const weeks = await ok(`/v1/reports/versions?product=app&${RANGE}&interval=week`);
    assert.deepEqual(weeks.adoption, [
      { date: '2026-05-04', version: '1.0', actors: 2 },
      { date: '2026-05-11', version: '2.0', actors: 2 },
      { date: '2026-05-11', version: '1.0', actors: 1 },
    ]);
  });

  it('answers a key without view_accounts the same adoption and share, without the account parts', async () => {
    // Without the archived-accounts part the groups are per (actor, version), not per (actor, version, account).
    const res = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/tenants/${tenantId}/keys`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { name: 'reader', permissions: ['read'] },
    });
    assert.equal(res.statusCode, 201, res.body);
    const body = await ok(`/v1/reports/versions?product=app&${RANGE}`, res.json().key);
    // As for the admin key: May 10 1.0 by u1, u2; May 11 2.0 by u3; May 12 1.0 by u2, 2.0 by u1; u1 and u3 end on 2.0.
    assert.deepEqual(body.adoption, [
      { date: '2026-05-10', version: '1.0', actors: 2 },
      { date: '2026-05-11', version: '2.0', actors: 1 },
      { date: '2026-05-12', version: '1.0', actors: 1 },
      { date: '2026-05-12', version: '2.0', actors: 1 },
    ]);
    assert.deepEqual([body.share_on_latest, body.upgrade_lag, body.archived_accounts], [66.6667, null, null]);
  });

  it('needs a product; hides the account parts from a plan without account views', async () => {
    assert.equal((await get(t.app, key, `/v1/reports/versions?${RANGE}`)).statusCode, 400);
    const starter = await tenantWithProduct(t.app, 'starter');
    const body = await ok(`/v1/reports/versions?product=app&${RANGE}`, starter.adminKey);
    assert.deepEqual([body.adoption, body.upgrade_lag, body.archived_accounts], [[], null, null]);
  });
});

describe('GET /v1/reports/accounts', () => {
  it('active accounts and licenses per day; 402 on a plan without account views', async () => {
    const body = await ok(`/v1/reports/accounts?${RANGE}`);
    assert.deepEqual(body.data, [
      { date: '2026-05-10', accounts: 2, licenses: 0 },
      { date: '2026-05-11', accounts: 0, licenses: 0 },
      { date: '2026-05-12', accounts: 2, licenses: 0 },
    ]);
    // Kiritimati (UTC+14, whole hours: from the read model's active hours): u1 May 11 00:00 and May 13 00:00 (A),
    // u2 May 11 01:00 and May 13 01:00 (B), u3 May 11 23:00 (no account). May 13 is past the range.
    const kiri = await ok(`/v1/reports/accounts?${RANGE}&tz=Pacific/Kiritimati`);
    assert.deepEqual(kiri.data, [
      { date: '2026-05-10', accounts: 0, licenses: 0 },
      { date: '2026-05-11', accounts: 2, licenses: 0 },
      { date: '2026-05-12', accounts: 0, licenses: 0 },
    ]);
    const starter = await createTenant(t.app, 'starter');
    assert.equal((await get(t.app, starter.adminKey, `/v1/reports/accounts?${RANGE}`)).statusCode, 402);
  });

  it('with a version filter, in UTC: the accounts that had events on that version each day, from the usage days', async () => {
    // Its own tenant. x1 (account A): 1.0 May 10 10:00, then 2.0 May 10 12:00 (its actor day keeps
    // 2.0 as the day's last version); x2 (account B, license L1): 1.0 May 12. So version 1.0: A on
    // May 10, B (and L1) on May 12; version 2.0: A on May 10.
    const other = await tenantWithProduct(t.app, 'business');
    const batch = [
      e('x1', '1.0', '2026-05-10T10:00:00Z', 'A'),
      e('x1', '2.0', '2026-05-10T12:00:00Z', 'A'),
      { ...e('x2', '1.0', '2026-05-12T09:00:00Z', 'B'), license_id: 'L1' },
    ];
    assert.equal((await postEvents(t.app, other.ingestKey, batch)).statusCode, 200);
    await fold();
    const days = async (v: string) =>
      (await get(t.app, other.adminKey, `/v1/reports/accounts?${RANGE}&version=${v}`))
        .json()
        .data.map((d: Record<string, unknown>) => [d.date, d.accounts, d.licenses]);
    assert.deepEqual(await days('1.0'), [
      ['2026-05-10', 1, 0],
      ['2026-05-11', 0, 0],
      ['2026-05-12', 1, 1],
    ]);
    assert.deepEqual(await days('2.0'), [
      ['2026-05-10', 1, 0],
      ['2026-05-11', 0, 0],
      ['2026-05-12', 0, 0],
    ]);
    // Read from the read model: an event not yet folded (x3, account C, 1.0 on May 11) shows after the next fold.
    assert.equal((await postEvents(t.app, other.ingestKey, [e('x3', '1.0', '2026-05-11T08:00:00Z', 'C')])).statusCode, 200);
    assert.deepEqual((await days('1.0'))[1], ['2026-05-11', 0, 0]);
    await fold();
    assert.deepEqual((await days('1.0'))[1], ['2026-05-11', 1, 0]);
  });
});

describe('GET /v1/environment/{field}', () => {
  it('active actors by OS, "other" past the limit; another tenant sees none', async () => {
    const body = await ok(`/v1/environment/os?${RANGE}`);
    const rows = body.data.map((r: { value: string | null; actors: number; actor_share: number }) => [r.value, r.actors, r.actor_share]);
    // u1 Windows, u2 macOS, u3 sent none: a third each.
    assert.deepEqual(
      rows.sort(),
      [
        ['Windows', 1, 33.3333],
        ['macOS', 1, 33.3333],
        [null, 1, 33.3333],
      ].sort(),
    );
    const top = await ok(`/v1/environment/os?${RANGE}&limit=1`);
    assert.deepEqual(top.data.at(-1), { value: null, other: true, actors: 2, sessions: 0, actor_share: 66.6667 });
    const other = await createTenant(t.app, 'business');
    assert.deepEqual((await ok(`/v1/environment/os?${RANGE}`, other.adminKey)).data, []);
    assert.equal((await get(t.app, key, '/v1/environment/shoe_size')).statusCode, 400);
  });
});
