import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppError } from '../../errors.js';
import { isIngestionPath } from './cors.js';

// Clients send X-Environment-Data only once and mark it sent whatever the answer (CONTRACT.md), so
// a refused ingestion request (429, 402) that carries it is held, not refused at once: its body is
// read, the environment kept, and then it is refused. Requests without the header are refused
// before their body is read. The rate limit and the billing gate hold; the environment plugin
// keeps and then refuses.

declare module 'fastify' {
  interface FastifyRequest {
    /** A refusal (429, 402) held back until the body is read, to keep its X-Environment-Data. */
    heldRefusal: AppError | null;
  }
}

/** Refuses the request now, or, when it carries X-Environment-Data, once that is kept. */
export function holdRefusal(request: FastifyRequest, refusal: AppError): void {
  if (!request.headers['x-environment-data']) throw refusal;
  request.heldRefusal = refusal;
}

/** After the body is read: `keep` runs for a held request, which is then refused. */
export function registerHeldRefusals(app: FastifyInstance, keep: (request: FastifyRequest) => Promise<void>): void {
  app.decorateRequest('heldRefusal', null);
  app.addHook('preValidation', async (request) => {
    if (!request.heldRefusal || !isIngestionPath(request.routeOptions.url)) return;
    await keep(request);
    throw request.heldRefusal;
  });
}
