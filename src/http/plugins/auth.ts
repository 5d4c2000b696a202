import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { forbidden, unauthorized } from '../../errors.js';
import { hashApiKey, looksLikeApiKey, type Permission } from '../../domain/keys.js';
import type { Db } from '../../storage/db.js';
import { findKeyByHash, type KeyPrincipal } from '../../storage/tenants.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: KeyPrincipal | null;
  }
}

/** The Bearer token of a request, or undefined. A key anywhere else (query string, Basic) does not count. */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

/**
 * onRequest hook: resolves the API key before the body is read, so a 401 or 403 costs one indexed
 * look-up and never a parse. A revoked key fails on its next request, in every server process: on
 * PostgreSQL keys are not cached, and the embedded store's cache is dropped before a change to it
 * is acknowledged (storage/catalog.ts).
 */
export function requireKey(db: Db, anyOf: Permission[]): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, _reply: FastifyReply) => {
    const token = bearerToken(request);
    if (!token || !looksLikeApiKey(token)) throw unauthorized();
    const principal = await findKeyByHash(db, hashApiKey(token));
    if (!principal) throw unauthorized();
    if (!anyOf.some((p) => principal.permissions.includes(p))) throw forbidden(anyOf.join(' or '));
    request.principal = principal;
  };
}

export function principalOf(request: FastifyRequest): KeyPrincipal {
  if (!request.principal) throw unauthorized();
  return request.principal;
}
