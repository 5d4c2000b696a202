import { Type, type Static } from 'typebox';
import type { Queryable } from '../../storage/db.js';
import { iso } from '../../storage/rows.js';
import { ACCOUNT_PLANS } from '../../domain/plans.js';
import { exactTime, FilterProps, head, keysetCursor, Params, rawEvents, resolveFilters, type Filters, type Principal } from '../filters.js';
import { pageOf } from '../page.js';

// The event explorer: raw events newest first with the filter grammar and a cursor, and the
// same as an export, read in keyset pages of EXPORT_PAGE rows so that memory stays bounded
// whatever the size. account_id and license_id are shown only to callers who may see accounts
// (SPEC.md: stored on every plan, visible on the account plans).

export const EventListQuery = Type.Object({
  ...(({ interval: _i, compare: _c, ...rest }) => rest)(FilterProps),
  actor_id: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'as sent, or the identified actor (its linked anonymous ids too)' })),
  session_id: Type.Optional(Type.String({ format: 'uuid' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 1024 })),
});
export type EventListParams = Static<typeof EventListQuery>;

export interface ExplorerEvent {
  event_id: string;
  occurred_at: string;
  received_at: string;
  product: string;
  product_version: string;
  category: string;
  name: string;
  actor_id: string;
  identified_actor_id: string | null;
  session_id: string | null;
  account_id?: string | null;
  license_id?: string | null;
  properties: Record<string, unknown> | null;
}

// Small enough that a page's rows and text die young (the garbage collector's cheap generation)
// instead of piling up in the old one between collections.
export const EXPORT_PAGE = 1_000;

export const seesAccounts = (p: Principal) =>
  p.permissions.includes('view_accounts') && (ACCOUNT_PLANS as readonly string[]).includes(p.tenant.plan) && p.tenant.account_context_enabled;

type Keyed = ExplorerEvent & { at_key: string };
async function page(q: Queryable, f: Filters, p: EventListParams, accounts: boolean, before: string[] | undefined, limit: number): Promise<Keyed[]> {
  const sql = new Params();
  const extra: string[] = [];
  if (p.actor_id !== undefined) extra.push(`(e.actor_id = ${sql.p(p.actor_id)} OR l.identified_actor_id = ${sql.p(p.actor_id)})`);
  if (p.session_id !== undefined) extra.push(`e.session_id = ${sql.p(p.session_id)}::uuid`);
  if (before) extra.push(`(e.occurred_at, e.event_id) < (${sql.p(before[0])}::timestamptz, ${sql.p(before[1])}::uuid)`);
  const columns = `e.event_id::text, e.occurred_at, e.received_at, (SELECT slug FROM products p WHERE p.id = e.product_id) AS product, e.product_version, e.category, e.name,
     e.actor_id, l.identified_actor_id, e.session_id::text, e.account_id, e.license_id, e.properties, ${exactTime('e.occurred_at')} AS at_key`;
  const base = rawEvents(f, sql, columns);
  const rows = await q.query<Omit<Keyed, 'occurred_at' | 'received_at'> & { occurred_at: Date; received_at: Date }>(
    `${base}${extra.length ? ' AND ' + extra.join(' AND ') : ''} ORDER BY e.occurred_at DESC, e.event_id DESC LIMIT ${sql.p(limit)}`,
    sql.values,
  );
  return rows.map(({ account_id, license_id, ...r }) => ({
    ...r,
    occurred_at: iso(r.occurred_at)!,
    received_at: iso(r.received_at)!,
    ...(accounts ? { account_id, license_id } : {}),
  }));
}

export async function listEvents(q: Queryable, principal: Principal, p: EventListParams, now: Date) {
  const f = await resolveFilters(q, principal, p, now);
  const before = keysetCursor(p.cursor, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
  const limit = p.limit ?? 50;
  const rows = f.scope.empty ? [] : await page(q, f, p, seesAccounts(principal), before, limit + 1);
  const paged = pageOf(rows, limit, (r) => [r.at_key, r.event_id]);
  return { ...(await head(q, f.scope)), ...paged, data: paged.data.map(({ at_key: _k, ...r }) => r) };
}

/** Every matching event, newest first, page by page (the caller streams them out). */
export async function* exportEvents(q: Queryable, principal: Principal, p: EventListParams, now: Date): AsyncGenerator<ExplorerEvent[]> {
  const f = await resolveFilters(q, principal, p, now);
  if (f.scope.empty) return;
  const accounts = seesAccounts(principal);
  let before: string[] | undefined;
  for (;;) {
    const rows = await page(q, f, p, accounts, before, EXPORT_PAGE);
    if (rows.length > 0) yield rows.map(({ at_key: _k, ...r }) => r);
    if (rows.length < EXPORT_PAGE) return;
    const last = rows[rows.length - 1]!;
    before = [last.at_key, last.event_id];
  }
}
