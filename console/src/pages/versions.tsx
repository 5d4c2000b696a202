import { useState } from 'preact/hooks';
import { api, ApiError, type Page } from '../api';
import { fmt, pct, useQuery, when } from '../data';
import type { Product } from '../session';
import { Empty, ErrorState, Show, Table } from '../ui';
import { FirstEvent, NoPermission, productOf, ProductPicker, type PageProps } from './common';

export interface Version {
  id: string;
  product: string;
  product_version: string;
  status: string;
  release_date: string | null;
  source: string;
  created_at: string;
  first_seen: string | null;
  last_seen: string | null;
}

export function Versions({ access, params }: PageProps) {
  const slug = productOf(access, params);
  const [error, setError] = useState<ApiError | null>(null);
  const product = useQuery(`p:${slug}`, () => api<Product>(`/v1/products/${encodeURIComponent(slug)}`));
  const versions = useQuery(`v:${slug}`, () => api<Page<Version>>(`/v1/products/${encodeURIComponent(slug)}/versions`, { query: { limit: 500 } }));
  if (!access.read) return <NoPermission what="versions" permission="read" />;
  if (!slug) return <Empty title="No products yet">Create one with POST /v1/products.</Empty>;
  const act = (p: Promise<unknown>) =>
    p.then(
      () => (setError(null), product.reload(), versions.reload()),
      (e: unknown) => setError(e instanceof ApiError ? e : new ApiError(0, 'error', String(e))),
    );
  const manage = access.manage;
  return (
    <>
      <div class="filters">
        <ProductPicker access={access} value={slug} />
      </div>
      {error && <ErrorState error={error} />}
      <Show q={product} what="the product">
        {(p) => (
          <div class="toggle-row">
            <label>
              <input
                type="checkbox"
                id="strict-mode"
                checked={p.strict_versions_enabled}
                disabled={!manage}
                onChange={(e) => act(api(`/v1/products/${p.id}`, { method: 'PATCH', body: { strict_versions_enabled: e.currentTarget.checked } }))}
              />{' '}
              Strict version mode: only registered, active versions are accepted
            </label>
            {!manage && <span class="muted"> (changing it needs a manage_products key)</span>}
          </div>
        )}
      </Show>
      <Adoption slug={slug} />
      {manage && <Register slug={slug} onDone={act} />}
      <Show q={versions} what="versions">
        {(page) =>
          page.data.length === 0 ? (
            <FirstEvent product={slug} />
          ) : (
            <Table
              id="versions"
              caption={`Versions of ${slug}`}
              head={['Version', 'Status', 'Source', 'Release date', 'First seen', 'Last seen', '']}
              rows={page.data.map((v) => [
                v.product_version,
                v.status,
                v.source,
                v.release_date ?? '—',
                when(v.first_seen),
                when(v.last_seen),
                manage ? (
                  <button
                    type="button"
                    onClick={() =>
                      act(
                        api(`/v1/products/${encodeURIComponent(slug)}/versions/${v.id}`, {
                          method: 'PATCH',
                          body: { status: v.status === 'archived' ? 'active' : 'archived' },
                        }),
                      )
                    }
                  >
                    {v.status === 'archived' ? 'Restore' : 'Archive'} {v.product_version}
                  </button>
                ) : (
                  ''
                ),
              ])}
            />
          )
        }
      </Show>
    </>
  );
}

function Register({ slug, onDone }: { slug: string; onDone: (p: Promise<unknown>) => void }) {
  const [version, setVersion] = useState('');
  const [date, setDate] = useState('');
  return (
    <form
      class="filters"
      onSubmit={(e) => {
        e.preventDefault();
        onDone(
          api('/v1/version-registrations', { method: 'POST', body: { product: slug, product_version: version, ...(date ? { release_date: date } : {}) } }),
        );
        setVersion('');
      }}
    >
      <span class="field">
        <label for="reg-version">Version to register</label>
        <input id="reg-version" value={version} onInput={(e) => setVersion(e.currentTarget.value)} required placeholder="2.1.0" />
      </span>
      <span class="field">
        <label for="reg-date">Release date</label>
        <input id="reg-date" type="date" value={date} onInput={(e) => setDate(e.currentTarget.value)} />
      </span>
      <button type="submit">Register</button>
    </form>
  );
}

interface VersionsReport {
  latest_version: string | null;
  share_on_latest: number | null;
  adoption: { date: string; version: string; actors: number }[];
}

/** Adoption over the last 30 days: the share of active actors on the latest version, and the versions actors were on at the last day with activity. */
function Adoption({ slug }: { slug: string }) {
  const q = useQuery(`adoption:${slug}`, () => api<VersionsReport>('/v1/reports/versions', { query: { product: slug, range: '30d' } }));
  return (
    <Show q={q} what="adoption">
      {(r) => {
        const lastDay = r.adoption.reduce((d, a) => (a.date > d ? a.date : d), '');
        const rows = r.adoption.filter((a) => a.date === lastDay).sort((a, b) => b.actors - a.actors);
        return (
          <section data-adoption-ready="true">
            <h2>Adoption, last 30 days</h2>
            <p>
              Latest version: <strong>{r.latest_version ?? '—'}</strong>; active actors on it:{' '}
              <strong data-metric="share-on-latest">{r.share_on_latest === null ? '—' : pct(r.share_on_latest, 100)}</strong>
            </p>
            {rows.length > 0 && (
              <Table caption={`Actors per version on ${lastDay}`} head={['Version', 'Actors']} rows={rows.map((a) => [a.version, fmt.format(a.actors)])} />
            )}
          </section>
        );
      }}
    </Show>
  );
}
