import { useState } from 'preact/hooks';
import { api, ApiError } from '../api';
import { useQuery } from '../data';
import { Empty, ErrorState, Show, Table } from '../ui';
import { NoPermission, productOf, ProductPicker, type PageProps } from './common';

interface Allowlist {
  enabled: boolean;
  rules: { category: string; name: string }[];
}

export function Allowlists({ access, params }: PageProps) {
  const slug = productOf(access, params);
  const path = `/v1/products/${encodeURIComponent(slug)}/allowlist`;
  const q = useQuery(path, () => api<Allowlist>(path));
  const [error, setError] = useState<ApiError | null>(null);
  const [rule, setRule] = useState({ category: '', name: '' });
  if (!access.read) return <NoPermission what="allowlists" permission="read" />;
  if (!slug) return <Empty title="No products yet">Create one with POST /v1/products.</Empty>;
  const put = (body: Partial<Allowlist>) =>
    api(path, { method: 'PUT', body }).then(
      () => (setError(null), q.reload()),
      (e: unknown) => setError(e instanceof ApiError ? e : new ApiError(0, 'error', String(e))),
    );
  return (
    <>
      <div class="filters">
        <ProductPicker access={access} value={slug} />
      </div>
      {error && <ErrorState error={error} />}
      <Show q={q} what="the allowlist">
        {(list) => (
          <>
            <label class="toggle-row">
              <input
                type="checkbox"
                id="allowlist-enabled"
                checked={list.enabled}
                disabled={!access.manage}
                onChange={(e) => put({ enabled: e.currentTarget.checked })}
              />{' '}
              Allowlist on: events matching no rule are rejected (ALLOWLIST_REJECTED)
            </label>
            {list.rules.length === 0 ? (
              <p class="muted">No rules yet.</p>
            ) : (
              <Table
                caption={`Rules of ${slug}`}
                head={['Category', 'Name', access.manage ? 'Action' : '']}
                rows={list.rules.map((r, i) => [
                  r.category,
                  r.name,
                  access.manage ? (
                    <button type="button" class="quiet" onClick={() => put({ rules: list.rules.filter((_, j) => j !== i) })}>
                      Remove {r.category}/{r.name}
                    </button>
                  ) : (
                    ''
                  ),
                ])}
              />
            )}
            {access.manage && (
              <section aria-labelledby="add-rule">
                <h2 id="add-rule">Add a rule</h2>
                <p class="muted">
                  An event passes when its category and name match a rule&apos;s; <code>*</code> matches any run of characters (e.g. <code>feature</code> /{' '}
                  <code>export.*</code>).
                </p>
                <form
                  class="filters"
                  onSubmit={(e) => {
                    e.preventDefault();
                    put({ rules: [...list.rules, rule] }).then(() => setRule({ category: '', name: '' }));
                  }}
                >
                  <span class="field">
                    <label for="rule-category">Category</label>
                    <input id="rule-category" required value={rule.category} onInput={(e) => setRule({ ...rule, category: e.currentTarget.value })} />
                  </span>
                  <span class="field">
                    <label for="rule-name">Name</label>
                    <input id="rule-name" required value={rule.name} onInput={(e) => setRule({ ...rule, name: e.currentTarget.value })} />
                  </span>
                  <button type="submit">Add rule</button>
                </form>
              </section>
            )}
          </>
        )}
      </Show>
    </>
  );
}
