import type { FastifyRequest } from 'fastify';
import { validationError } from '../../errors.js';
import { findHostileContent } from '../../domain/record-rules.js';
import type { App } from '../context.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route judges its body element by element (ingestion): dead letters, not a 400. */
    ownBodyRules?: boolean;
    /** A write among the read side's routes (saving a segment): a statement timeout there is a 503, not a 422. */
    write?: boolean;
  }
}

// PostgreSQL cannot store a NUL, and a lone surrogate cannot be written as UTF-8: either one in a
// path id, a query filter or a management body would fail deep in a query (a 500) or come back
// as JSON that strict parsers refuse. One hook refuses them at the door, after the key is checked
// (401 and 403 are decided from the headers first), naming the field. Prototype keys and nesting
// past 32 levels are refused the same way. Ingestion bodies keep their own per-element rules.
export function registerInputGuard(app: App): void {
  app.addHook('preValidation', async (request: FastifyRequest) => {
    badlyEncoded(request.url);
    const problem =
      findHostileContent(request.params, '') ??
      findHostileContent(request.query, '') ??
      (request.routeOptions.config.ownBodyRules ? undefined : findHostileContent(request.body, ''));
    if (problem) throw validationError([{ field: problem.field === '(root)' ? 'body' : problem.field, message: problem.message }]);
  });
}

/**
 * A query parameter whose percent-encoding is not UTF-8 (`%ff`, `%c3%28`, a lone `%`): the query
 * parser would keep its raw text as the value, so a filter would silently match nothing. Refused,
 * naming the parameter.
 */
function badlyEncoded(url: string): void {
  const q = url.indexOf('?');
  if (q < 0 || !url.includes('%', q)) return;
  const decoded = (text: string) => {
    try {
      return decodeURIComponent(text.replaceAll('+', ' '));
    } catch {
      return undefined;
    }
  };
  for (const pair of url.slice(q + 1).split('&')) {
    const eq = pair.indexOf('=');
    const [key, value] = eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)];
    const name = decoded(key);
    if (name === undefined || decoded(value) === undefined) throw validationError([{ field: name ?? 'query', message: 'is not valid percent-encoded UTF-8' }]);
  }
}
