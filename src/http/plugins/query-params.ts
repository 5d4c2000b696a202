import type { FastifyRequest, preValidationAsyncHookHandler } from 'fastify';
import type { TObject } from 'typebox';
import { validationError } from '../../errors.js';

/**
 * CONTRACT.md, query side: an unknown query parameter is a 400 naming it (a misspelt filter must
 * not quietly widen an answer). The route's querystring schema lists what is known; no schema,
 * no parameters.
 */
export function onlyKnownParams(schema?: TObject): preValidationAsyncHookHandler {
  const known = new Set(Object.keys(schema?.properties ?? {}));
  return async (request: FastifyRequest) => {
    const query = request.query as Record<string, unknown> | undefined;
    const unknown = Object.keys(query ?? {}).filter((k) => !known.has(k));
    if (unknown.length > 0) throw validationError(unknown.slice(0, 10).map((field) => ({ field, message: 'unknown parameter' })));
  };
}
