import type { AllowRule } from '../domain/allowlist.js';
import type { Queryable } from './db.js';

export async function rulesOf(q: Queryable, productIds: string[]): Promise<Map<string, AllowRule[]>> {
  const map = new Map<string, AllowRule[]>(productIds.map((id) => [id, []]));
  if (productIds.length === 0) return map;
  const rows = await q.query<{ product_id: string; category: string; name: string }>(
    'SELECT product_id, category, name FROM allowlist_rules WHERE product_id = ANY($1::uuid[]) ORDER BY category, name',
    [productIds],
  );
  for (const r of rows) map.get(r.product_id)!.push({ category: r.category, name: r.name });
  return map;
}

export async function setAllowlistEnabled(q: Queryable, tenantId: string, productId: string, enabled: boolean): Promise<void> {
  await q.query('UPDATE products SET allowlist_enabled = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2', [tenantId, productId, enabled]);
}

export async function replaceRules(q: Queryable, productId: string, rules: AllowRule[]): Promise<void> {
  await q.query('DELETE FROM allowlist_rules WHERE product_id = $1', [productId]);
  await addRules(q, productId, rules);
}

export async function addRules(q: Queryable, productId: string, rules: AllowRule[]): Promise<void> {
  if (rules.length === 0) return;
  await q.query(
    `INSERT INTO allowlist_rules (product_id, category, name) SELECT $1, c, n FROM unnest($2::text[], $3::text[]) AS r(c, n)
     ON CONFLICT DO NOTHING`,
    [productId, rules.map((r) => r.category), rules.map((r) => r.name)],
  );
}
