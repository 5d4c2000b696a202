// Files the server keeps beside the embedded store, for the operator CLI on the same machine:
// the operator token (generated on the first start when ADMIN_TOKEN is not set, mode 0600) and
// the address the running server listens on. With them `npm run admin -- …` talks to the running
// server without a restart and without the operator copying anything.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const tokenPath = (dataDir: string) => join(dataDir, 'admin-token');
const urlPath = (dataDir: string) => join(dataDir, 'server-url');

/** The operator token kept in DATA_DIR, or undefined when there is none. */
export function readOperatorToken(dataDir: string): string | undefined {
  const path = tokenPath(dataDir);
  if (!existsSync(path)) return undefined;
  const token = readFileSync(path, 'utf8').trim();
  return token || undefined;
}

/** The token in DATA_DIR, created (256 random bits, readable by this user only) if there is none; `created` says which. */
export function ensureOperatorToken(dataDir: string): { token: string; created: boolean; path: string } {
  const path = tokenPath(dataDir);
  const existing = readOperatorToken(dataDir);
  if (existing) {
    chmodSync(path, 0o600); // a copy restored from a backup may have lost its mode
    return { token: existing, created: false, path };
  }
  mkdirSync(dataDir, { recursive: true });
  const token = `tadm_${randomBytes(32).toString('base64url')}`;
  writeFileSync(path, token + '\n', { mode: 0o600 });
  chmodSync(path, 0o600); // the umask cannot widen it, but an existing empty file kept its mode
  return { token, created: true, path };
}

export function writeServerUrl(dataDir: string, url: string): void {
  writeFileSync(urlPath(dataDir), url + '\n');
}

export function readServerUrl(dataDir: string): string | undefined {
  const path = urlPath(dataDir);
  return existsSync(path) ? readFileSync(path, 'utf8').trim() || undefined : undefined;
}

export function removeServerUrl(dataDir: string): void {
  rmSync(urlPath(dataDir), { force: true });
}
