import { AsyncLocalStorage } from 'node:async_hooks';
import { Readable } from 'node:stream';
import { Type, type Static } from 'typebox';
import type { Db, Queryable } from '../../storage/db.js';
import { exactTime, iso } from '../../storage/rows.js';
import { seesAccounts } from '../guard.js';
import { FilterProps, head, keysetCursor, rawEvents, resolveFilters, type Filters, type Principal } from '../filters.js';
import { pageOf } from '../page.js';
import { Params } from '../params.js';

// The event explorer: raw events newest first with the filter grammar and a cursor, and the
// same as an export (NDJSON or CSV), its lines written by PostgreSQL: in one COPY on a PostgreSQL
// server, in keyset pages (EXPORT_PAGE_ROWS) on the embedded store.
// account_id and license_id are shown only to callers who may see accounts (SPEC.md: stored on
// every plan, visible on the account plans).

export const EventListQuery = Type.Object({
  ...(({ compare: _c, ...rest }) => rest)(FilterProps),
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

/** The explorer's events of the filters (after the keyset position `before` when given, within `bounds`), newest first, without LIMIT. */
function matching(f: Filters, p: EventListParams, sql: Params, columns: string, before: string[] | undefined, bounds?: Bounds): string {
  const extra: string[] = [];
  if (bounds) extra.push(`e.occurred_at >= ${sql.add(bounds.lo)}::timestamptz AND e.occurred_at < ${sql.add(bounds.hi)}::timestamptz`);
  if (p.actor_id !== undefined) extra.push(`(e.actor_id = ${sql.add(p.actor_id)} OR l.identified_actor_id = ${sql.add(p.actor_id)})`);
  if (p.session_id !== undefined) extra.push(`e.session_id = ${sql.add(p.session_id)}::uuid`);
  if (before) extra.push(`(e.occurred_at, e.event_id) < (${sql.add(before[0])}::timestamptz, ${sql.add(before[1])}::uuid)`);
  return `${rawEvents(f, sql, columns)}${extra.length ? ' AND ' + extra.join(' AND ') : ''} ORDER BY e.occurred_at DESC, e.event_id DESC`;
}

const PRODUCT = '(SELECT slug FROM products p WHERE p.id = e.product_id)';
const EVENT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Where matching events can lie: occurred_at in [lo, hi). */
interface Bounds {
  lo: string;
  hi: string;
}

/**
 * The explorer's time bounds when it filters by a version, else undefined; null when no event can
 * match. Newest first, a page of a version no one has run for weeks would otherwise walk back over
 * every newer event (0.8–9 s at 1M events, and growing with the data). The bounds: the version's
 * first and last UTC hour in rm_event_hours (two index probes, read with the job's horizon in one
 * statement), widened by its events the job had not folded at that horizon (above it or pending:
 * through the ingest_xid BRIN index, few while the job keeps up; a fold that commits in between
 * only makes them overlap). Hours only over-state (an erased actor's events leave their hours), so
 * every matching event lies inside: the bounds save reading, never change the answer.
 */
async function bounds(q: Queryable, f: Filters, before: string[] | undefined): Promise<Bounds | null | undefined> {
  const s = f.scope;
  if (s.version === undefined || s.productId === undefined) return undefined;
  const sql = new Params();
  const [tenant, product, version, from] = [sql.add(s.tenantId), sql.add(s.productId), sql.add(s.version), sql.add(s.from)];
  const to = before ? `least(${sql.add(s.to)}::timestamptz, ${sql.add(before[0])}::timestamptz + interval '1 microsecond')` : `${sql.add(s.to)}::timestamptz`;
  const hour = (dir: 'ASC' | 'DESC') =>
    `(SELECT hour FROM rm_event_hours WHERE tenant_id = ${tenant} AND product_id = ${product} AND product_version = ${version}
         AND hour >= date_trunc('hour', ${from}::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AND hour < ${to} ORDER BY hour ${dir} LIMIT 1)`;
  const [h] = await q.query<{ horizon: string; pending: string[]; lo: string | null; hi: string | null }>(
    `SELECT horizon::text, pending::text[] AS pending, ${exactTime(hour('ASC'))} AS lo, ${exactTime(`(${hour('DESC')} + interval '1 hour')`)} AS hi
       FROM rollup_state WHERE id = 1`,
    sql.values,
  );
  const horizon = h?.horizon ?? '0';
  const pending = h?.pending ?? [];
  // Literal bounds on ingest_xid, so that the planner sees how few rows lie above them.
  const least = pending.reduce((a, x) => (BigInt(x) < BigInt(a) ? x : a), horizon);
  const u = new Params();
  const [r] = await q.query<{ lo: string | null; hi: string | null }>(
    `SELECT ${exactTime('min(occurred_at)')} AS lo, ${exactTime("(max(occurred_at) + interval '1 microsecond')")} AS hi FROM (
       SELECT occurred_at FROM events WHERE tenant_id = ${u.add(s.tenantId)} AND ingest_xid >= ${u.add(least)}::bigint
          AND (ingest_xid >= ${u.add(horizon)}::bigint OR ingest_xid = ANY(${u.add(pending)}::bigint[]))
          AND product_id = ${u.add(s.productId)} AND product_version = ${u.add(s.version)}
          AND occurred_at >= ${u.add(s.from)} AND occurred_at < ${before ? `least(${u.add(s.to)}::timestamptz, ${u.add(before[0])}::timestamptz + interval '1 microsecond')` : u.add(s.to)}
       OFFSET 0) x`,
    u.values,
  );
  // Exact UTC text of one width: it orders as the instants do.
  const lo = [h?.lo, r?.lo].filter((t) => t != null).sort()[0];
  const hi = [h?.hi, r?.hi]
    .filter((t) => t != null)
    .sort()
    .at(-1);
  return lo && hi ? { lo, hi } : null;
}

type Keyed = ExplorerEvent & { at_key: string };
async function page(q: Queryable, f: Filters, p: EventListParams, accounts: boolean, before: string[] | undefined, limit: number): Promise<Keyed[]> {
  const within = await bounds(q, f, before);
  if (within === null) return [];
  const sql = new Params();
  const columns = `e.event_id::text, e.occurred_at, e.received_at, ${PRODUCT} AS product, e.product_version, e.category, e.name,
     e.actor_id, l.identified_actor_id, e.session_id::text, e.account_id, e.license_id, e.properties, ${exactTime('e.occurred_at')} AS at_key`;
  const rows = await q.query<Omit<Keyed, 'occurred_at' | 'received_at'> & { occurred_at: Date; received_at: Date }>(
    `${matching(f, p, sql, columns, before, within)} LIMIT ${sql.add(limit)}`,
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
  const before = keysetCursor(p.cursor, EVENT_ID);
  const limit = p.limit ?? 50;
  const rows = f.scope.empty ? [] : await page(q, f, p, seesAccounts(principal), before, limit + 1);
  const paged = pageOf(rows, limit, (r) => [r.at_key, r.event_id]);
  return { ...(await head(q, f.scope)), ...paged, data: paged.data.map(({ at_key: _k, ...r }) => r) };
}

// The export. PostgreSQL writes each row's line itself (one text value per row instead of
// thirteen values, a row object, two Dates and the parsed properties): on a PostgreSQL server
// one COPY sends them all and their bytes go to the socket as they come, never a JS string; on
// the embedded store the rows of a page are joined into one string. The line says what the JSON
// page says, in its order: timestamps in milliseconds as toISOString writes them, `properties` as
// PostgreSQL prints jsonb (`{"k": "v"}`: the same JSON, with spaces), and CSV cells as csv.ts's
// cell() writes them. Where the memory goes: docs/benchmarks.md, "Reports".

export type ExportFormat = 'csv' | 'ndjson';

/** The CSV columns, in order (account_id and license_id stay empty for callers who may not see accounts). */
export const EXPORT_COLUMNS = [
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
] as const;

const millis = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/** Columns whose text is ours (uuids, timestamps): no quote, comma, line break or formula-looking start, nothing to escape in JSON. */
const PLAIN = new Set<string>(['event_id', 'occurred_at', 'received_at', 'session_id']);
/**
 * csv.ts's cell() of a text value: empty for null; a start a spreadsheet would run as a formula
 * (= + - @ tab CR) prefixed with '; in double quotes, its quotes doubled, when it holds a quote, a
 * comma, CR or LF. Two plain regular expressions per cell when it holds none of these (nearly
 * always): one with an alternation of both costs four times as much.
 */
const csvText = (c: string) => {
  const prefixed = `CASE WHEN ${c} ~ '^[=+@\\t\\r-]' THEN '''' || ${c} ELSE ${c} END`;
  return `CASE WHEN ${c} IS NULL THEN '' WHEN ${c} ~ '[",\\r\\n]' THEN '"' || replace(${prefixed}, '"', '""') || '"'
    WHEN ${c} ~ '^[=+@\\t\\r-]' THEN '''' || ${c} ELSE ${c} END`;
};
/** properties (an object or null: events' schema) as its JSON, quoted unless empty (it holds quotes), never prefixed (csv.ts prefixes strings only). */
const csvJson = (c: string) =>
  `CASE WHEN ${c} IS NULL OR ${c} = 'null' THEN '' WHEN ${c} = '{}' THEN '{}' ELSE '"' || replace(${c}::text, '"', '""') || '"' END`;
const json = (c: string) => (PLAIN.has(c) ? `coalesce('"' || ${c} || '"', 'null')` : `coalesce(to_json(${c})::text, 'null')`);

/** SQL for one row's line, over the page's columns (named as EXPORT_COLUMNS). */
function lineSql(format: ExportFormat, accounts: boolean): string {
  if (format === 'csv') {
    const cells = EXPORT_COLUMNS.map((c) =>
      c === 'properties' ? csvJson(c) : !accounts && (c === 'account_id' || c === 'license_id') ? `''` : PLAIN.has(c) ? `coalesce(${c}, '')` : csvText(c),
    );
    return `concat_ws(',', ${cells.join(', ')}) || E'\\r\\n'`;
  }
  // The JSON page's key order: account_id and license_id last, and only for callers who may see accounts.
  const keys = [...EXPORT_COLUMNS.filter((c) => c !== 'account_id' && c !== 'license_id'), ...(accounts ? ['account_id', 'license_id'] : [])];
  const members = keys.map((c, i) => `'${i ? ',' : '{'}"${c}":' || ${c === 'properties' ? `coalesce(${c}::text, 'null')` : json(c)}`);
  return `${members.join(' || ')} || E'}\\n'`;
}

/** The columns lineSql reads, and the key (k_at, k_id). */
const LINE_COLUMNS = `e.event_id::text AS event_id, ${millis('e.occurred_at')} AS occurred_at, ${millis('e.received_at')} AS received_at, ${PRODUCT} AS product,
   e.product_version, e.category, e.name, e.actor_id, l.identified_actor_id, e.session_id::text AS session_id, e.account_id, e.license_id, e.properties,
   e.occurred_at AS k_at, e.event_id AS k_id`;

interface ExportPage {
  text: string;
  n: number;
  /** The last row's key when the page is full (a next page may follow). */
  last: [string, string] | undefined;
}
/** One page: its rows' lines as one string, how many, and the last row's key when the page is full. */
async function exportPage(
  q: Queryable,
  f: Filters,
  p: EventListParams,
  format: ExportFormat,
  accounts: boolean,
  before: string[] | undefined,
  limit: number,
): Promise<ExportPage> {
  const sql = new Params();
  const n = sql.add(limit);
  // One row per event rather than the page as one text value: a value past 128 kB is a large
  // object in V8, moved to the old generation by the first collection it lives through, and the
  // driver buffers a whole message (twice its size) in memory outside the heap. The key (exact
  // time, id) comes only on a full page's last row: the next page starts after it.
  const rows = await q.query<{ line: string; k: string | null }>(
    `SELECT ${lineSql(format, accounts)} AS line,
            CASE WHEN row_number() OVER (ORDER BY k_at DESC, k_id DESC) = ${n} THEN ${exactTime('k_at')} || ' ' || k_id END AS k
       FROM (${matching(f, p, sql, LINE_COLUMNS, before)} LIMIT ${n}) pg ORDER BY k_at DESC, k_id DESC`,
    sql.values,
  );
  let text = '';
  for (const r of rows) text += r.line;
  const k = rows.length === limit ? rows[rows.length - 1]!.k!.split(' ') : undefined;
  return { text, n: rows.length, last: k as [string, string] | undefined };
}

/** The export on PostgreSQL: one COPY of every line, newest first, streamed as the server writes it. */
function exportCopySql(
  f: Filters,
  p: EventListParams,
  format: ExportFormat,
  accounts: boolean,
  before: string[] | undefined,
): { text: string; values: unknown[] } {
  const sql = new Params();
  const text = `SELECT ${lineSql(format, accounts)} AS line FROM (${matching(f, p, sql, LINE_COLUMNS, before)}) ev ORDER BY k_at DESC, k_id DESC`;
  return { text, values: sql.values };
}

/**
 * Every matching event, newest first (after `cursor` when given), as the export's bytes: the CSV
 * header, then one line per event. Parameters are checked (and the echo read) before it
 * resolves, so that a bad one is still an error answer. On PostgreSQL one COPY writes every line
 * and its bytes go out as they come (Db.copyText: no string per row, a connection held for the
 * export's length, released when it ends, fails or its client goes); it resolves once the first
 * line (or the end) has come, so that a statement timeout before it is still a 422. On the
 * embedded store (one connection, which an export must not hold) the lines are read a page of
 * `pageRows` at a time, each page written out before the next is asked for.
 */
export async function exportEvents(
  db: Db,
  principal: Principal,
  p: EventListParams,
  now: Date,
  format: ExportFormat,
  pageRows: number,
): Promise<{ head: Awaited<ReturnType<typeof head>>; body: Readable }> {
  const f = await resolveFilters(db, principal, p, now);
  const cursor = keysetCursor(p.cursor, EVENT_ID);
  const accounts = seesAccounts(principal);
  const header = format === 'csv' ? EXPORT_COLUMNS.join(',') + '\r\n' : '';
  const echo = await head(db, f.scope);
  if (db.copyText && !f.scope.empty) {
    const { text, values } = exportCopySql(f, p, format, accounts, cursor);
    return { head: echo, body: await db.copyText(text, values, header ? Buffer.from(header) : undefined) };
  }
  // The next page is asked for from the socket's callbacks: its statement runs in the request's
  // context all the same (on the embedded store, the read lane), not in theirs.
  const inRequest = AsyncLocalStorage.snapshot();
  async function* pages(): AsyncGenerator<string> {
    if (header) yield header;
    if (f.scope.empty) return;
    const read = (before: string[] | undefined) => inRequest(() => exportPage(db, f, p, format, accounts, before, pageRows));
    let next: Promise<ExportPage> | undefined = read(cursor);
    try {
      while (next) {
        const page: ExportPage = await next;
        // The next page is read while this one goes out: two pages in memory at most.
        next = page.last ? read(page.last) : undefined;
        if (page.n > 0) yield page.text;
      }
    } finally {
      // A client gone mid-export: the statement already sent ends, nobody waits for it, and no other starts.
      next?.catch(() => {});
    }
  }
  // One page buffered ahead of the socket at most (Readable.from would read 16 ahead), and the
  // next read only once the socket has taken it (pipe's backpressure). A client that goes away
  // destroys the stream, which ends the generator after the statement running.
  return { head: echo, body: Readable.from(pages(), { highWaterMark: 1 }) };
}
