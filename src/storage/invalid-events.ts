import { v7 as uuidv7 } from 'uuid';
import type { Queryable } from './db.js';
import { iso } from './rows.js';

export type RecordKind = 'event' | 'session' | 'session_end' | 'exception' | 'identify';

export interface DeadLetter {
  kind: RecordKind;
  reason: string;
  message: string;
  product: string | null;
  payload: string;
}

const PAYLOAD_LIMIT = 8192;

// JSON.stringify writes a lone surrogate as a \udXXX escape: valid JSON text, but not valid
// Unicode, and strict parsers (jq) refuse the whole page that carries it. Such escapes (an odd
// run of backslashes before the u) become \ufffd when a payload is kept and when it is read back,
// which covers rows kept before this rule.
const LONE_SURROGATE_ESCAPE = /(?<!\\)((?:\\\\)*)\\u[dD][89a-fA-F][0-9a-fA-F]{2}/g;
export const withoutLoneSurrogates = (json: string): string => json.replace(LONE_SURROGATE_ESCAPE, '$1\\ufffd');

/** The raw element as JSON, cut to 8 KB of UTF-8 at a code-point boundary. */
export function deadLetterPayload(raw: unknown): string {
  let text: string;
  try {
    text = withoutLoneSurrogates(JSON.stringify(raw) ?? 'null');
  } catch {
    text = '"<unserialisable element>"'; // e.g. nesting too deep for JSON.stringify
  }
  if (text.length * 3 <= PAYLOAD_LIMIT || Buffer.byteLength(text) <= PAYLOAD_LIMIT) return text;
  const buf = Buffer.from(text).subarray(0, PAYLOAD_LIMIT);
  // Drop a partial UTF-8 sequence at the end rather than store U+FFFD.
  let end = buf.length;
  let i = end - 1;
  while (i >= 0 && (buf[i]! & 0xc0) === 0x80) i--;
  if (i >= 0) {
    const lead = buf[i]!;
    const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
    if (end - i < need) end = i;
  }
  return buf.subarray(0, end).toString('utf8');
}

/** The dead letters' bulk insert; `$t`, `$k`, `$r`, `$j`: tenant, API key, receive time, JSON rows. */
export function deadLettersInsertSql(t: string, k: string, r: string, j: string): string {
  return `INSERT INTO invalid_events (id, tenant_id, kind, reason, message, product, payload, api_key_id, received_at)
     SELECT r.id, ${t}, r.kind, r.reason, r.message, r.product, r.payload, ${k}, ${r}
       FROM json_to_recordset(${j}::json) AS r(id uuid, kind text, reason text, message text, product text, payload text)`;
}

/** The JSON rows for deadLettersInsertSql, each with a new UUIDv7. */
export const deadLetterRows = (letters: DeadLetter[]): string => JSON.stringify(letters.map((l) => ({ id: uuidv7(), ...l })));

export async function insertDeadLetters(q: Queryable, tenantId: string, apiKeyId: string | null, receivedAt: Date, letters: DeadLetter[]): Promise<void> {
  if (letters.length === 0) return;
  await q.query(deadLettersInsertSql('$1', '$2', '$3', '$4'), [tenantId, apiKeyId, receivedAt, deadLetterRows(letters)]);
}

export interface InvalidEventFilter {
  product?: string | undefined;
  reason?: string | undefined;
  kind?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
  beforeId?: string | undefined;
  limit: number;
}

export interface InvalidEventRow {
  id: string;
  kind: string;
  reason: string;
  message: string;
  product: string | null;
  payload: unknown;
  api_key_id: string | null;
  received_at: string;
}

export async function listDeadLetters(q: Queryable, tenantId: string, f: InvalidEventFilter): Promise<InvalidEventRow[]> {
  const rows = await q.query(
    `SELECT id, kind, reason, message, product, payload, api_key_id, received_at FROM invalid_events
      WHERE tenant_id = $1
        AND ($2::text IS NULL OR product = $2) AND ($3::text IS NULL OR reason = $3) AND ($4::text IS NULL OR kind = $4)
        AND ($5::timestamptz IS NULL OR received_at >= $5) AND ($6::timestamptz IS NULL OR received_at < $6)
        AND ($7::uuid IS NULL OR id < $7)
      ORDER BY id DESC LIMIT $8`,
    [tenantId, f.product ?? null, f.reason ?? null, f.kind ?? null, f.since ?? null, f.until ?? null, f.beforeId ?? null, f.limit],
  );
  return rows.map((r) => {
    let payload: unknown = r.payload;
    try {
      payload = JSON.parse(withoutLoneSurrogates(r.payload as string));
    } catch {
      // truncated payloads are returned as the text that was kept
    }
    return {
      id: r.id as string,
      kind: r.kind as string,
      reason: r.reason as string,
      message: (r.message as string).toWellFormed(),
      product: (r.product as string | null)?.toWellFormed() ?? null,
      payload,
      api_key_id: (r.api_key_id as string | null) ?? null,
      received_at: iso(r.received_at)!,
    };
  });
}

/** Deletes up to `limit` dead letters received before `olderThan`. Ids are UUIDv7, so the primary key is also the time index. */
export async function purgeDeadLetters(q: Queryable, olderThan: Date, limit: number): Promise<number> {
  const hex = olderThan.getTime().toString(16).padStart(12, '0');
  const boundary = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
  const rows = await q.query('DELETE FROM invalid_events WHERE id IN (SELECT id FROM invalid_events WHERE id < $1::uuid ORDER BY id LIMIT $2) RETURNING id', [
    boundary,
    limit,
  ]);
  return rows.length;
}
