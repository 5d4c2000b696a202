import { notFound } from '../errors.js';
import { encodeCursor, type CursorPart } from '../domain/cursor.js';
import { traitsOf } from '../storage/identity.js';
import type { Db } from '../storage/db.js';
import {
  actorsOf,
  counterpartsOf,
  dailyActivity,
  featuresOf,
  getSnapshot,
  listSnapshot,
  NO_WINDOW,
  productsOf,
  rollupInfo,
  versionsOf,
  type Detail,
  type RollupInfo,
  type Snapshot,
} from '../storage/accounts.js';
import { coverage } from '../storage/coverage.js';
import { WINDOW_DAYS } from '../storage/read-model/tables.js';
import { exceptionGroupsPage, exceptionGroupsQuery } from './exceptions.js';
import { cursorKey, pageOf } from './page.js';

// The account and license views, one function per endpoint (docs/accounts.md). Lists come from
// the per-tenant snapshots; one account or license from the read model within the window.

type Kind = 'account_id' | 'license_id';
type Scope = { tenantId: string; kind: Kind; id: string; windowStart: string };
export interface PageParams {
  limit?: number | undefined;
  cursor?: string | undefined;
}

/** refreshed_at and the window every answer carries, of the tenant's last refresh (`r`). */
const freshnessOf = (r: RollupInfo | undefined) => ({ refreshed_at: r?.refreshed_at ?? null, window_days: 30 as const, window_start: r?.window_start ?? null });
const freshness = async (db: Db, tenantId: string) => freshnessOf(await rollupInfo(db, tenantId));
const windowOf = (f: { window_start: string | null }) => f.window_start ?? NO_WINDOW;
/** The window's instants: from its first UTC midnight to the midnight after its last day (the refresh's). */
const windowBounds = (start: string) =>
  start === NO_WINDOW
    ? { since: `${NO_WINDOW}T00:00:00Z` }
    : { since: `${start}T00:00:00Z`, until: new Date(Date.parse(`${start}T00:00:00Z`) + WINDOW_DAYS * 86_400_000).toISOString() };

/** A known account or license (seen in the window at the last refresh); otherwise 404, for another tenant's too. */
async function scoped<K extends Kind>(db: Db, tenantId: string, kind: K, id: string) {
  const f = await freshness(db, tenantId);
  const snapshot = await getSnapshot(db, tenantId, kind, id);
  if (!snapshot) throw notFound('not_found', kind === 'account_id' ? 'account' : 'license');
  return { f, snapshot, scope: { tenantId, kind, id, windowStart: windowOf(f) } };
}

/**
 * One account's or license's lists: from its snapshot row when the last refresh built them
 * (rollups.ts, refreshDetail: as of refreshed_at, like the counts beside them), else live from the
 * read model (a snapshot refreshed before migration 090, until the job's next run).
 */
async function detailOf(db: Db, scope: Scope, snapshot: Snapshot & { detail: Detail | null }): Promise<Detail> {
  if (snapshot.detail) return snapshot.detail;
  const [products, versions, counterparts, days] = [
    await productsOf(db, scope),
    await versionsOf(db, scope),
    await counterpartsOf(db, scope),
    scope.kind === 'license_id' ? await dailyActivity(db, scope) : null,
  ];
  return { products, versions, counterparts, days };
}

function countsOf<K extends 'accounts' | 'licenses'>(s: Snapshot, other: K) {
  const base = { events: s.events, sessions: s.sessions, exceptions: s.exceptions, active_actors: s.active_actors, products: s.products };
  return { ...base, [other]: s[other] } as typeof base & Record<K, number>;
}
const accountRow = ({ id, accounts: _a, ...r }: Snapshot) => ({ account_id: id, ...r });
const licenseRow = ({ id, licenses: _l, ...r }: Snapshot) => ({ license_id: id, ...r });

export async function listAccounts(db: Db, tenantId: string, p: PageParams) {
  const limit = p.limit ?? 50;
  const rows = await listSnapshot(db, tenantId, 'account_id', cursorKey(p.cursor, ['text'])?.[0], limit + 1);
  return { ...pageOf(rows.map(accountRow), limit, (r) => [r.account_id]), ...(await freshness(db, tenantId)) };
}

export async function listLicenses(db: Db, tenantId: string, p: PageParams) {
  const limit = p.limit ?? 50;
  const rows = await listSnapshot(db, tenantId, 'license_id', cursorKey(p.cursor, ['text'])?.[0], limit + 1);
  return { ...pageOf(rows.map(licenseRow), limit, (r) => [r.license_id]), ...(await freshness(db, tenantId)) };
}

export async function accountCoverage(db: Db, tenantId: string) {
  const { info, ...answer } = await coverage(db, tenantId);
  return { ...freshnessOf(info), ...answer };
}

export async function accountOverview(db: Db, tenantId: string, accountId: string) {
  const { f, snapshot, scope } = await scoped(db, tenantId, 'account_id', accountId);
  const detail = await detailOf(db, scope, snapshot);
  return {
    account_id: accountId,
    ...f,
    counts: countsOf(snapshot, 'licenses'),
    first_seen: snapshot.first_seen,
    last_seen: snapshot.last_seen,
    products: detail.products,
    versions: detail.versions,
    licenses: detail.counterparts.map(({ id, ...r }) => ({ license_id: id, ...r })),
    recent_exceptions: (await exceptionGroupsPage(db, tenantId, { account_id: accountId, ...windowBounds(scope.windowStart), limit: 5 })).data,
  };
}

export async function accountFeatures(db: Db, tenantId: string, accountId: string, p: PageParams) {
  const { f, scope } = await scoped(db, tenantId, 'account_id', accountId);
  const limit = p.limit ?? 50;
  const after = cursorKey(p.cursor, ['int', 'text', 'text']);
  return { ...pageOf(await featuresOf(db, scope, after, limit + 1), limit, (r) => [r.events, r.category, r.name]), ...f };
}

export async function accountActors(db: Db, tenantId: string, accountId: string, p: PageParams) {
  const { f, scope } = await scoped(db, tenantId, 'account_id', accountId);
  const limit = p.limit ?? 50;
  const page = pageOf(await actorsOf(db, scope, cursorKey(p.cursor, ['text'])?.[0], limit + 1), limit, (r) => [r.actor_id]);
  // identify's traits, the newest per identified actor (an anonymous actor shows its user's).
  const traits = await traitsOf(
    db,
    tenantId,
    page.data.map((r) => r.actor_id),
  );
  return { ...page, data: page.data.map((r) => ({ ...r, traits: traits.get(r.actor_id) ?? null })), ...f };
}

type ListKey = readonly (string | number)[];

/** Most events first, then the ids in order: the order of the lists a snapshot holds. */
function byEvents(a: ListKey, b: ListKey): number {
  if (a[0] !== b[0]) return Number(b[0]) - Number(a[0]);
  for (let i = 1; i < a.length; i++) if (a[i] !== b[i]) return String(a[i]) < String(b[i]) ? -1 : 1;
  return 0;
}

/**
 * A page of a list the snapshot already holds, keyed (events, ids) like every list's cursor, so
 * a page follows on from the previous one even when a refresh came between them. Sorted here, so
 * that the order and the cursor's comparison agree whatever the database's collation.
 */
function pageByEvents<T extends { events: number }>(rows: readonly T[], p: PageParams, shape: readonly CursorPart[], ids: (row: T) => string[]) {
  const limit = p.limit ?? 50;
  const after = cursorKey(p.cursor, shape);
  const key = (r: T): ListKey => [r.events, ...ids(r)];
  const sorted = [...rows].sort((a, b) => byEvents(key(a), key(b)));
  const rest = after ? sorted.filter((r) => byEvents(key(r), after) > 0) : sorted;
  const data = rest.slice(0, limit);
  const last = data[data.length - 1];
  return { data, next_cursor: rest.length > limit && last ? encodeCursor(key(last)) : null };
}

export async function accountLicenses(db: Db, tenantId: string, accountId: string, p: PageParams) {
  const { f, snapshot, scope } = await scoped(db, tenantId, 'account_id', accountId);
  const licenses = (await detailOf(db, scope, snapshot)).counterparts.map(({ id, ...r }) => ({ license_id: id, ...r }));
  return { ...pageByEvents(licenses, p, ['int', 'text'], (r) => [r.license_id]), ...f };
}

export async function accountVersions(db: Db, tenantId: string, accountId: string, p: PageParams) {
  const { f, snapshot, scope } = await scoped(db, tenantId, 'account_id', accountId);
  const versions = (await detailOf(db, scope, snapshot)).versions;
  return { ...pageByEvents(versions, p, ['int', 'text', 'text'], (r) => [r.source_app, r.source_version]), ...f };
}

export async function accountExceptions(db: Db, tenantId: string, accountId: string, query: Parameters<typeof exceptionGroupsQuery>[2], now: Date) {
  await scoped(db, tenantId, 'account_id', accountId);
  return exceptionGroupsQuery(db, tenantId, { ...query, account_id: accountId }, now);
}

export async function licenseDetail(db: Db, tenantId: string, licenseId: string) {
  const { f, snapshot, scope } = await scoped(db, tenantId, 'license_id', licenseId);
  const detail = await detailOf(db, scope, snapshot);
  return {
    license_id: licenseId,
    ...f,
    counts: countsOf(snapshot, 'accounts'),
    first_seen: snapshot.first_seen,
    last_seen: snapshot.last_seen,
    accounts: detail.counterparts.map(({ id, ...r }) => ({ account_id: id, ...r })),
    products: detail.products,
    versions: detail.versions,
    active_actors: snapshot.active_actors,
    recent_activity: detail.days ?? [],
  };
}
