import type { FastifyInstance } from 'fastify';

// CONTRACT.md "Browser clients": the ingestion routes answer any origin (keys are bearer tokens,
// no cookies), and every response, errors included, exposes Retry-After. Without these headers
// a browser hides the status from the client, which then loses or mis-times the batch.
export const INGESTION_PATHS = ['/v1/events', '/v1/events/sessions', '/v1/events/sessions/end', '/v1/events/exceptions', '/v1/actors/identify'] as const;

const ingestion: ReadonlySet<string> = new Set(INGESTION_PATHS);

export function isIngestionPath(url: string | undefined): boolean {
  if (!url) return false;
  const q = url.indexOf('?');
  return ingestion.has(q === -1 ? url : url.slice(0, q));
}

export function registerCors(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (isIngestionPath(request.routeOptions.url ?? request.url)) {
      reply.header('access-control-allow-origin', '*');
      reply.header('access-control-expose-headers', 'Retry-After');
    }
    return payload;
  });
  for (const path of INGESTION_PATHS) {
    app.options(path, { schema: { hide: true } }, async (_request, reply) => {
      reply
        .header('access-control-allow-methods', 'POST, OPTIONS')
        .header('access-control-allow-headers', 'authorization, content-type, x-environment-data')
        .header('access-control-max-age', '86400')
        .code(204)
        .send();
    });
  }
}
