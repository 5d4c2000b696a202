import { createHash, randomBytes } from 'node:crypto';

export const PERMISSIONS = ['ingest', 'read', 'manage_products', 'view_accounts'] as const;
export type Permission = (typeof PERMISSIONS)[number];

const KEY_PREFIX = 'tk_live_';
const KEY_PATTERN = /^tk_live_[A-Za-z0-9_-]{43}$/;

/** A new API key: 256 random bits behind a readable prefix. Only its hash is ever stored. */
export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const key = KEY_PREFIX + randomBytes(32).toString('base64url');
  return { key, prefix: key.slice(0, KEY_PREFIX.length + 6), hash: hashApiKey(key) };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Cheap shape check so that garbage never costs a store round trip. */
export function looksLikeApiKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

export function isPermission(p: unknown): p is Permission {
  return typeof p === 'string' && (PERMISSIONS as readonly string[]).includes(p);
}
