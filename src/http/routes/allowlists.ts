import { Type } from 'typebox';
import { validationError } from '../../errors.js';
import { isStorableString } from '../../domain/text.js';
import { allowlistProblem, type AllowRule } from '../../domain/allowlist.js';
import { addRules, replaceRules, rulesOf, setAllowlistEnabled } from '../../storage/allowlists.js';
import type { App, AppContext } from '../context.js';
import { requireProduct } from '../lookups.js';
import { principalOf, requireKey } from '../plugins/auth.js';
import { IdParams, problems } from '../schemas/common.js';

const Rule = Type.Object({
  category: Type.String({ minLength: 1, maxLength: 128, description: '`*` matches any run of characters' }),
  name: Type.String({ minLength: 1, maxLength: 256, description: '`*` matches any run of characters' }),
});
const Allowlist = Type.Object({ enabled: Type.Boolean(), rules: Type.Array(Rule) });
const PutAllowlist = Type.Object({
  enabled: Type.Optional(Type.Boolean()),
  rules: Type.Optional(Type.Array(Rule, { maxItems: 10_000, description: 'replaces the list when given' })),
});
const Manifest = Type.Object(
  {
    schema_version: Type.Optional(Type.Union([Type.String(), Type.Number()])),
    generated_at: Type.Optional(Type.String()),
    product: Type.Optional(Type.String()),
    events: Type.Array(Rule, { maxItems: 10_000 }),
  },
  { description: "The clients' event manifest; its pairs are added to the list (the enabled flag is left as it is)." },
);

const tags = ['allowlists'];
const security = [{ bearer: [] }];

function checkRules(rules: AllowRule[], field: string): AllowRule[] {
  rules.forEach((r, i) => {
    if (!isStorableString(r.category) || !isStorableString(r.name))
      throw validationError([{ field: `${field}[${i}]`, message: 'contains a NUL character or a lone surrogate' }]);
  });
  const problem = allowlistProblem(rules, field);
  if (problem) throw validationError([problem]);
  return rules.map((r) => ({ category: r.category, name: r.name }));
}

export function allowlistRoutes(app: App, ctx: AppContext): void {
  const canRead = requireKey(ctx.db, ['read', 'manage_products']);
  const canManage = requireKey(ctx.db, ['manage_products']);

  const show = async (tenantId: string, idOrSlug: string) => {
    const product = await requireProduct(ctx.db, tenantId, idOrSlug);
    const rules = (await rulesOf(ctx.db, [product.id])).get(product.id) ?? [];
    const [row] = await ctx.db.query<{ allowlist_enabled: boolean }>('SELECT allowlist_enabled FROM products WHERE id = $1', [product.id]);
    return { product, body: { enabled: row?.allowlist_enabled ?? false, rules } };
  };

  app.get(
    '/v1/products/:id/allowlist',
    {
      onRequest: canRead,
      schema: { summary: "A product's event allowlist", tags, security, params: IdParams, response: { 200: Allowlist, ...problems(401, 403, 404) } },
    },
    async (request) => (await show(principalOf(request).tenant.id, request.params.id)).body,
  );

  app.put(
    '/v1/products/:id/allowlist',
    {
      onRequest: canManage,
      schema: {
        summary: 'Turn the allowlist on or off, and/or replace its rules',
        description: 'When on, events whose (category, name) matches no rule are rejected ALLOWLIST_REJECTED, whatever the strict version mode.',
        tags,
        security,
        params: IdParams,
        body: PutAllowlist,
        response: { 200: Allowlist, ...problems(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const product = await requireProduct(ctx.db, tenant.id, request.params.id);
      const rules = request.body.rules ? checkRules(request.body.rules, 'rules') : undefined;
      await ctx.db.tx(async (q) => {
        if (rules) await replaceRules(q, product.id, rules);
        if (request.body.enabled !== undefined) await setAllowlistEnabled(q, tenant.id, product.id, request.body.enabled);
      });
      return (await show(tenant.id, product.id)).body;
    },
  );

  app.post(
    '/v1/products/:id/allowlist/import',
    {
      onRequest: canManage,
      schema: {
        summary: "Import the clients' event manifest into the allowlist",
        tags,
        security,
        params: IdParams,
        body: Manifest,
        response: { 200: Allowlist, ...problems(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { tenant } = principalOf(request);
      const product = await requireProduct(ctx.db, tenant.id, request.params.id);
      const events = checkRules(request.body.events, 'events');
      // The caps hold for the list as it will be: what is there already plus what is imported.
      const current = (await rulesOf(ctx.db, [product.id])).get(product.id) ?? [];
      const merged = new Map([...current, ...events].map((r) => [`${r.category}\u0000${r.name}`, r]));
      const problem = allowlistProblem([...merged.values()], 'events');
      if (problem) throw validationError([{ field: 'events', message: problem.message }]);
      await addRules(ctx.db, product.id, events);
      return (await show(tenant.id, product.id)).body;
    },
  );
}
