import type { FastifyInstance } from 'fastify';
import { AppError } from '../../errors.js';

// CONTRACT.md: while the server is shutting down the answer is 503 with Retry-After, and every
// non-2xx body is problem+json (with the CORS headers on ingestion routes). Fastify's own
// return503OnClosing writes a bare JSON body without either, to requests that arrive on a kept-
// alive or pipelined connection during app.close(); it is off (src/app.ts) and this hook answers
// them instead, through the error handler like every other refusal.
export function registerClosingRefusal(app: FastifyInstance): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    reply.header('connection', 'close');
    throw new AppError(503, 'shutting_down', 'the server is shutting down; retry on another instance or shortly', { headers: { 'retry-after': '5' } });
  });
}
