// Profiles one fold of N new events (copied from existing ones) with EXPLAIN ANALYZE, rolled back.
import pg from 'pg';
import { foldNewRows, foldRange } from '/work/wt/readmodel/src/storage/rollups.js';
const url = process.argv[2]!;
const n = Number(process.argv[3] ?? 100000);
const c = new pg.Client({ connectionString: url });
await c.connect();
const explain = process.argv[4] === 'explain';
if (n > 0) await c.query(`INSERT INTO events (tenant_id, event_id, product_id, product_version, category, name, occurred_at, received_at, actor_id, account_id, license_id, properties)
  SELECT tenant_id, gen_random_uuid(), product_id, product_version, category, name, now() - random() * interval '10 minutes', now(), actor_id, account_id, license_id, properties
    FROM events TABLESAMPLE SYSTEM (20) LIMIT ${n}`);
await c.query('VACUUM ANALYZE events');
const plans: string[] = [];
const q = {
  async query(sql: string, params?: unknown[]) {
    const t0 = performance.now();
    if (!explain && /^\s*(WITH|INSERT|UPDATE|DELETE)/.test(sql)) {
      const r = await c.query(sql, params);
      plans.push(`-- ${(performance.now() - t0).toFixed(0)} ms ${sql.replace(/\s+/g, ' ').slice(0, 100)}`);
      return r.rows;
    }
    if (/^\s*(WITH|INSERT|UPDATE|DELETE)/.test(sql)) {
      const r = await c.query(`EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
      plans.push(`-- ${(performance.now() - t0).toFixed(0)} ms\n${sql.slice(0, 200)}\n${r.rows.map((x) => x['QUERY PLAN']).join('\n')}`);
      return [];
    }
    const r = await c.query(sql, params);
    return r.rows;
  },
  async exec(sql: string) { await c.query(sql); },
};
await c.query('BEGIN');
await c.query('SET LOCAL jit = off');
const t0 = performance.now();
const r = await foldRange(q as never);
await foldNewRows(q as never, r);
const ms = performance.now() - t0;
await c.query('ROLLBACK');
console.log(plans.join('\n\n'));
console.log(`TOTAL ${ms.toFixed(0)} ms: ${(ms * 1000 / n).toFixed(1)} us/event`);
await c.end();
