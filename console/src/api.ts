// The console's only way to the server: fetch with the key as a Bearer token, problem+json
// turned into an ApiError the pages can show (status, code, detail).
const KEY = 'tally.console.key';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY);
}
export function storeKey(key: string | null): void {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(`${status} ${code}: ${detail}`);
  }
}

export type Query = Record<string, string | number | boolean | undefined | null>;

export function withQuery(path: string, query: Query = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

export async function api<T>(path: string, init: { method?: string; body?: unknown; query?: Query; key?: string; accept?: string } = {}): Promise<T> {
  const key = init.key ?? storedKey();
  const headers: Record<string, string> = { accept: init.accept ?? 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(withQuery(path, init.query), {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    credentials: 'omit',
  });
  if (!res.ok) {
    let code = 'http_error';
    let detail = res.statusText;
    try {
      const p = (await res.json()) as { code?: string; detail?: string; title?: string };
      code = p.code ?? code;
      detail = p.detail ?? p.title ?? detail;
    } catch {
      /* not JSON */
    }
    throw new ApiError(res.status, code, detail);
  }
  if (init.accept && init.accept !== 'application/json') return (await res.text()) as T;
  return (await res.json()) as T;
}

export interface Page<T> {
  data: T[];
  next_cursor: string | null;
}
