// One POST, as the delivery loop needs it: the status, Retry-After and the parsed body, or a
// network failure. Browsers hide the status and Retry-After of a cross-origin answer unless the
// server exposes them (CONTRACT.md "Browser clients"); Tally does, on every ingestion route.

export interface HttpAnswer {
  status: number;
  retryAfter: string | null;
  body: unknown;
}

export type PostOutcome = { ok: true; answer: HttpAnswer } | { ok: false; error: string };

export interface PostRequest {
  fetch: typeof fetch;
  url: string;
  apiKey: string;
  body: string;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** Browser page exit: let the request outlive the page (bodies up to 64 KB). */
  keepalive?: boolean;
}

export async function postJson(req: PostRequest): Promise<PostOutcome> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), req.timeoutMs);
  try {
    const res = await req.fetch(req.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${req.apiKey}`, 'content-type': 'application/json', ...req.headers },
      body: req.body,
      signal: controller.signal,
      ...(req.keepalive ? { keepalive: true } : {}),
    });
    let body: unknown;
    try {
      const text = await res.text();
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined; // a proxy's HTML page, or a cut body: the status still decides
    }
    return { ok: true, answer: { status: res.status, retryAfter: res.headers.get('retry-after'), body } };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
  } finally {
    clearTimeout(timer);
  }
}
