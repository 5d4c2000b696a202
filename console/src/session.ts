// What the signed-in key may do, learnt by probing (there is no "who am I" endpoint): each probe
// is a read, or a write that cannot change anything (a PATCH of a product that does not exist).
import { api, ApiError } from './api';

export interface Product {
  id: string;
  slug: string;
  name: string;
  status: string;
  strict_versions_enabled: boolean;
}

export interface Access {
  read: boolean;
  manage: boolean;
  /** 'ok', or why account views are not available: 'forbidden', 'plan' (402), 'disabled'. */
  accounts: 'ok' | 'forbidden' | 'plan' | 'disabled';
  accountsDetail: string;
  products: Product[];
}

const status = (p: Promise<unknown>) =>
  p.then(
    () => ({ status: 200, code: '', detail: '' }),
    (e: unknown) => (e instanceof ApiError ? { status: e.status, code: e.code, detail: e.detail } : Promise.reject(e)),
  );

export async function probe(key: string): Promise<Access> {
  const products = await api<{ data: Product[] }>('/v1/products', { key, query: { limit: 500 } }).catch((e: unknown) => {
    if (e instanceof ApiError && e.status === 403) return null;
    throw e;
  });
  const [manage, accounts] = await Promise.all([
    status(api('/v1/products/console-permission-probe', { key, method: 'PATCH', body: {} })),
    status(api('/v1/accounts', { key, query: { limit: 1 } })),
  ]);
  if (manage.status === 401) throw new ApiError(401, manage.code, manage.detail);
  return {
    read: products !== null,
    manage: manage.status !== 403,
    accounts: accounts.status === 200 ? 'ok' : accounts.status === 402 ? 'plan' : accounts.code === 'account_context_disabled' ? 'disabled' : 'forbidden',
    accountsDetail: accounts.detail,
    products: products?.data ?? [],
  };
}
