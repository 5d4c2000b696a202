import type { Access } from '../session';
import { Empty, Select } from '../ui';

/** The ranges a report page offers (the API takes more: docs/reports.md). */
export const RANGES: [string, string][] = [
  ['7d', 'Last 7 days'],
  ['30d', 'Last 30 days'],
  ['90d', 'Last 90 days'],
  ['month', 'This month'],
];

export interface PageProps {
  access: Access;
  params: URLSearchParams;
}

/** The product a view is about: ?product=<slug>, the first product by default. */
export function productOf(access: Access, params: URLSearchParams): string {
  return params.get('product') ?? access.products[0]?.slug ?? '';
}

export function ProductPicker({ access, value, all, clears }: { access: Access; value: string; all?: boolean; clears?: string[] }) {
  const options: [string, string][] = access.products.map((p) => [p.slug, p.name === p.slug ? p.slug : `${p.name} (${p.slug})`]);
  return <Select label="Product" name="product" value={value} options={all ? [['', 'All products'], ...options] : options} clears={clears} />;
}

export function NoPermission({ what, permission }: { what: string; permission: string }) {
  return (
    <Empty title={`This key may not see ${what}`}>
      <p>
        It needs the <code>{permission}</code> permission. Sign in with a key that has it, or ask your operator (whoever runs this Tally server) for one.
      </p>
      <p class="muted">
        Operators issue it with <code>npm run admin -- issue-key &lt;tenant&gt; --permissions {permission}</code>.
      </p>
    </Empty>
  );
}

/** No events yet: what to paste to send the first one. */
export function FirstEvent({ product }: { product: string | undefined }) {
  const origin = location.origin;
  if (!product)
    return (
      <Empty title="No products yet">
        <p>
          Create the product your application will send as <code>product</code>, with the tenant's admin key:
        </p>
        <pre
          tabIndex={0}
        >{`curl -X POST ${origin}/v1/products -H 'Authorization: Bearer <admin key>' -H 'Content-Type: application/json' -d '{"slug":"my-app"}'`}</pre>
        <p>Then reload this page: it shows how to send a first event.</p>
      </Empty>
    );
  const curl = `curl -X POST ${origin}/v1/events \\
  -H 'Authorization: Bearer <ingest key>' -H 'Content-Type: application/json' \\
  -d '[{"event_id":"'$(uuidgen)'","category":"app","name":"started","timestamp":"'$(date -u +%FT%TZ)'","actor_id":"user-1","product":"${product}","product_version":"1.0.0"}]'`;
  const client = `import { init, track } from '@tally/client';
init({ apiKey: '<ingest key>', endpoint: '${origin}', product: '${product}', productVersion: '1.0.0' });
track('app', 'started');`;
  return (
    <Empty title="No events yet">
      <p>Send a first event with the tenant's ingest key, from a shell:</p>
      <pre tabIndex={0}>{curl}</pre>
      <p>or from your application with the TypeScript client:</p>
      <pre tabIndex={0}>{client}</pre>
      <p>Then reload this page.</p>
    </Empty>
  );
}
