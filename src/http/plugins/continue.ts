import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';

// `Expect: 100-continue` (CONTRACT.md, "Browser clients"): clients send it on large bodies, and
// resend a 402-refused batch on every flush tick, so 401 and 402 are decided from the headers
// before the body is read. Node answers "100 Continue" by itself the moment the headers arrive
// unless the server listens for `checkContinue`; then the client uploads the whole body before
// it can see the refusal. Here the 100 waits until every onRequest hook (key, billing, rate
// limit, overload, shutdown) has let the request through and its body is about to be read; a
// request refused before that gets its final status instead, and Node closes the connection
// after it (the client never sent the body). A declared body over the route's limit gets no 100
// either: the 413 follows from Content-Length alone.

const expecting = new WeakSet<IncomingMessage>();

export function registerDeferredContinue(app: FastifyInstance): void {
  app.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    expecting.add(req);
    app.server.emit('request', req, res);
  });
  // Any other expectation is ignored (RFC 9110 allows, not requires, a 417) and the request is
  // answered as it would be without it; Node's own 417 has no body, no problem+json and no CORS.
  app.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => app.server.emit('request', req, res));
  app.addHook('preParsing', async (request, reply) => {
    if (!expecting.has(request.raw) || reply.raw.headersSent) return;
    expecting.delete(request.raw);
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > request.routeOptions.bodyLimit) return;
    reply.raw.writeContinue();
  });
}
