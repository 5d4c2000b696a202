// The operator CLI: `npm run admin -- <command>`. The same operations as /admin/v1, and the same JSON.
// It calls a running server's /admin/v1 when given --url, or when a server owns the embedded store
// in DATA_DIR (the address and the operator token are read from DATA_DIR, where that server keeps
// them); otherwise it opens the store itself (DATABASE_URL, or the embedded store in DATA_DIR).
import { parseArgs } from 'node:util';
import * as ops from '../admin/operations.js';
import { loadConfig } from '../config.js';
import { AppError } from '../errors.js';
import { isPermission, type Permission } from '../domain/keys.js';
import { isPlanName, loadPlans, PLAN_NAMES } from '../domain/plans.js';
import { readOperatorToken, readServerUrl } from '../admin/operator-files.js';
import { openDb } from '../storage/db.js';
import { restorePglite } from '../storage/embedded/index.js';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { embeddedOwner } from '../storage/embedded/owner-lock.js';
import { migrate } from '../storage/migrate.js';

const USAGE = `usage: npm run admin -- <command> [options]

commands:
  list-tenants [--limit N] [--cursor C]       every tenant, oldest first (the demo tenant is the first)
  create-tenant --name NAME --plan PLAN       create a tenant; prints {tenant, api_keys}
  show-tenant ID                              plan, billing state and usage
  usage ID                                    usage of the current billing period
  set-plan ID PLAN                            change plan (trial|starter|pro|business|enterprise|unlimited)
  cancel ID                                   cancel the subscription
  reactivate ID                               reactivate a cancelled subscription
  issue-key ID --permissions P,P [--name N]   issue a key (ingest, read, manage_products, view_accounts)
  revoke-key ID KEY_ID                        revoke a key
  backup DIR                                  write a backup of the embedded store into DIR (while it serves)
  restore FILE                                fill DATA_DIR's embedded store from a backup (server stopped;
                                              an existing store is moved aside, never deleted)

options:
  --url URL     call the server at URL (token: ADMIN_TOKEN, or DATA_DIR/admin-token)
  --help

With the embedded store, a running server is found through DATA_DIR (its address and operator
token are kept there): no --url needed.`;

type Call = { method: string; path: string; body?: unknown; local: (deps: ops.AdminDeps) => Promise<unknown> };

function plan(p: string | undefined): ops.TenantView['plan'] {
  if (!isPlanName(p)) throw new Error(`plan must be one of ${PLAN_NAMES.join(', ')} (got ${p ?? 'nothing'})`);
  return p;
}

function permissions(list: string | undefined): Permission[] {
  const ps = (list ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (ps.length === 0 || !ps.every(isPermission)) throw new Error('--permissions takes a comma-separated list of ingest, read, manage_products, view_accounts');
  return ps as Permission[];
}

type Options = {
  name?: string | undefined;
  plan?: string | undefined;
  permissions?: string | undefined;
  limit?: string | undefined;
  cursor?: string | undefined;
};

function route(command: string, args: string[], opts: Options): Call {
  const need = (i: number, what: string) => {
    const v = args[i];
    if (!v) throw new Error(`${command}: missing ${what}`);
    return v;
  };
  switch (command) {
    case 'list-tenants': {
      const limit = opts.limit === undefined ? undefined : Number(opts.limit);
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 500)) throw new Error('--limit takes a whole number from 1 to 500');
      const query = new URLSearchParams({ ...(limit ? { limit: String(limit) } : {}), ...(opts.cursor ? { cursor: opts.cursor } : {}) }).toString();
      return { method: 'GET', path: `/admin/v1/tenants${query ? `?${query}` : ''}`, local: (d) => ops.listTenants(d, { limit, cursor: opts.cursor }) };
    }
    case 'create-tenant': {
      if (!opts.name) throw new Error('create-tenant: --name is required');
      const body = { name: opts.name, plan: plan(opts.plan) };
      return { method: 'POST', path: '/admin/v1/tenants', body, local: (d) => ops.createTenant(d, body) };
    }
    case 'show-tenant': {
      const id = need(0, 'tenant id');
      return { method: 'GET', path: `/admin/v1/tenants/${id}`, local: (d) => ops.showTenant(d, id) };
    }
    case 'usage': {
      const id = need(0, 'tenant id');
      return { method: 'GET', path: `/admin/v1/tenants/${id}`, local: async (d) => (await ops.showTenant(d, id)).usage };
    }
    case 'set-plan': {
      const id = need(0, 'tenant id');
      const body = { plan: plan(need(1, 'plan')) };
      return { method: 'PATCH', path: `/admin/v1/tenants/${id}`, body, local: (d) => ops.patchTenant(d, id, body) };
    }
    case 'cancel': {
      const id = need(0, 'tenant id');
      return { method: 'POST', path: `/admin/v1/tenants/${id}/subscription/cancel`, local: (d) => ops.cancelSubscription(d, id) };
    }
    case 'reactivate': {
      const id = need(0, 'tenant id');
      return { method: 'POST', path: `/admin/v1/tenants/${id}/subscription/reactivate`, local: (d) => ops.reactivateSubscription(d, id) };
    }
    case 'issue-key': {
      const id = need(0, 'tenant id');
      const body = { name: opts.name ?? 'key', permissions: permissions(opts.permissions) };
      return { method: 'POST', path: `/admin/v1/tenants/${id}/keys`, body, local: (d) => ops.issueKey(d, id, body) };
    }
    case 'revoke-key': {
      const id = need(0, 'tenant id');
      const keyId = need(1, 'key id');
      return { method: 'DELETE', path: `/admin/v1/tenants/${id}/keys/${keyId}`, local: async (d) => (await ops.revokeKey(d, id, keyId), { revoked: keyId }) };
    }
    default:
      throw new Error(`unknown command "${command}"\n\n${USAGE}`);
  }
}

type Config = ReturnType<typeof loadConfig>;

/** The running server's address and operator token when a server owns the embedded store, else undefined. */
function runningServer(config: Config): { url: string; token: string } | undefined {
  const owner = config.databaseUrl ? undefined : embeddedOwner(config.dataDir);
  if (!owner) return undefined;
  const url = readServerUrl(config.dataDir);
  const token = config.adminToken ?? readOperatorToken(config.dataDir);
  if (!url) throw new Error(`a Tally server (pid ${owner}) owns ${config.dataDir} but has not written its address yet; retry in a moment`);
  if (!token) throw new Error(`a Tally server (pid ${owner}) owns ${config.dataDir}: set ADMIN_TOKEN to its operator token`);
  return { url, token };
}

/** backup DIR: from the running server (GET /admin/v1/backup), or from the store itself when none runs. */
async function backup(config: Config, dir: string | undefined): Promise<unknown> {
  if (!dir) throw new Error('backup: missing DIR (the folder to write the backup into)');
  if (config.databaseUrl) throw new Error('with DATABASE_URL, back up PostgreSQL with pg_dump (docs/deploy.md); backup covers the embedded store');
  let tarball: Uint8Array;
  const server = runningServer(config);
  if (server) {
    const res = await fetch(new URL('/admin/v1/backup', server.url), { headers: { authorization: `Bearer ${server.token}` } });
    if (!res.ok) throw new Error(`the server answered ${res.status}: ${await res.text()}`);
    tarball = new Uint8Array(await res.arrayBuffer());
  } else {
    const db = await openDb({ dataDir: config.dataDir, poolSize: 1 });
    try {
      tarball = await db.dumpDataDir!();
    } finally {
      await db.close();
    }
  }
  mkdirSync(dir, { recursive: true });
  const file = resolve(dir, `tally-backup-${new Date().toISOString().replace(/[:.]/g, '-')}.tar.gz`);
  writeFileSync(file, tarball, { mode: 0o600 });
  return { backup: file, bytes: tarball.byteLength, from: server ? server.url : config.dataDir };
}

/** restore FILE: into DATA_DIR/pg, with no server running; what was there is moved aside, never deleted. */
async function restore(config: Config, file: string | undefined): Promise<unknown> {
  if (!file) throw new Error('restore: missing FILE (a backup written by npm run admin -- backup)');
  if (config.databaseUrl) throw new Error('with DATABASE_URL, restore PostgreSQL with pg_restore or psql (docs/deploy.md)');
  const owner = embeddedOwner(config.dataDir);
  if (owner) throw new Error(`a Tally server (pid ${owner}) owns ${config.dataDir}: stop it before restoring`);
  const tarball = readFileSync(file);
  const pgDir = join(config.dataDir, 'pg');
  let previous: string | null = null;
  if (existsSync(pgDir) && readdirSync(pgDir).length > 0) {
    previous = `${pgDir}.before-restore-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    renameSync(pgDir, previous);
  }
  await restorePglite(pgDir, tarball);
  return { restored: resolve(file), data_dir: resolve(config.dataDir), previous };
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      plan: { type: 'string' },
      permissions: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      url: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  const [command, ...args] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  const config = loadConfig();
  if (command === 'backup' || command === 'restore') {
    console.log(JSON.stringify(await (command === 'backup' ? backup : restore)(config, args[0]), null, 2));
    return 0;
  }
  const call = route(command, args, values);

  const owner = config.databaseUrl ? undefined : embeddedOwner(config.dataDir);
  const url = values.url ?? (owner ? readServerUrl(config.dataDir) : undefined);
  if (owner && !url)
    throw new Error(`a Tally server (pid ${owner}) owns ${config.dataDir} but has not written its address yet; retry in a moment, or pass --url`);
  if (url) {
    const token = config.adminToken ?? readOperatorToken(config.dataDir);
    if (!token) throw new Error(`calling ${url} needs the operator token: set ADMIN_TOKEN, or run where DATA_DIR holds admin-token`);
    const res = await fetch(new URL(call.path, url), {
      method: call.method,
      headers: { authorization: `Bearer ${token}`, ...(call.body ? { 'content-type': 'application/json' } : {}) },
      ...(call.body ? { body: JSON.stringify(call.body) } : {}),
    });
    const text = await res.text();
    const out = command === 'usage' && res.ok ? JSON.stringify((JSON.parse(text) as ops.TenantView).usage, null, 2) : text;
    console.log(out || JSON.stringify({ status: res.status }));
    return res.ok ? 0 : 1;
  }

  const db = await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
  try {
    await migrate(db);
    const result = await call.local({ db, plans: loadPlans(config.plansFile), trialDays: config.trialDays, settings: config });
    console.log(JSON.stringify(result, null, 2));
    return 0;
  } finally {
    await db.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof AppError) console.error(JSON.stringify({ status: err.status, code: err.code, detail: err.message }));
    else console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
