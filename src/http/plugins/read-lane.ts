import type { FastifyInstance } from 'fastify';
import { inReadLane } from '../../storage/read-lane.js';

// Requests that only read go in the store's read lane (src/storage/read-lane.ts): every GET, and
// the query bodies POSTed to the behaviour endpoints (a funnel, a retention matrix, paths, and the
// actors behind them). Ingestion and management are untouched.
const QUERY_POSTS = /^\/v1\/(funnels|retention|paths)(\/actors)?(\?|$)/;

export function registerReadLane(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.method === 'GET' || (request.method === 'POST' && QUERY_POSTS.test(request.url))) inReadLane(done);
    else done();
  });
}
