// The operator API over app.inject and the CLI as a child process, both against real stores; nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ADMIN_TOKEN, event, postEvents, startTestApp, type TestApp } from './helpers/app.js';

const run = promisify(execFile);
let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const admin = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, ...(payload ? { payload } : {}) });

describe('operator API', () => {
  it('issue 12 item 1: PATCH never turns a body key into SQL; unknown and server-owned fields are a 400 naming the field', async () => {
    const victim = (await admin('POST', '/admin/v1/tenants', { name: 'victim', plan: 'starter' })).json().tenant;
    const attacker = (await admin('POST', '/admin/v1/tenants', { name: 'attacker', plan: 'starter' })).json().tenant;
    const before = (await admin('GET', `/admin/v1/tenants/${victim.id}`)).json();
    for (const [field, value] of [
      ["name = (SELECT 'pwned'), plan", 'enterprise'],
      ["plan = 'enterprise' --", 'x'],
      ['cycle_anchor', '2020-01-01T00:00:00Z'],
      ['created_at', '2020-01-01T00:00:00Z'],
      ['trial_ends_at', '2099-01-01T00:00:00Z'],
      ['subscription_status', 'active'],
      ['id', '00000000-0000-0000-0000-000000000000'],
    ] as const) {
      const res = await admin('PATCH', `/admin/v1/tenants/${attacker.id}`, { plan: 'starter', [field]: value });
      assert.equal(res.statusCode, 400, `${field}: ${res.body}`);
      assert.equal(res.json().code, 'validation_error');
      assert.equal(res.json().errors[0].field, field);
    }
    assert.deepEqual((await admin('GET', `/admin/v1/tenants/${victim.id}`)).json(), before);
    const [row] = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM tenants WHERE name = 'pwned' OR (plan = 'enterprise' AND id IN ($1, $2))", [
      victim.id,
      attacker.id,
    ]);
    assert.equal(row!.n, 0);
    // The fields that are settable still are.
    const ok = await admin('PATCH', `/admin/v1/tenants/${attacker.id}`, { plan: 'pro', account_context_enabled: false });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.json().plan, 'pro');
    assert.equal(ok.json().account_context_enabled, false);
  });

  it('creates a tenant with one ingest key and one admin key with all four permissions, shown once', async () => {
    const res = await admin('POST', '/admin/v1/tenants', { name: 'acme', plan: 'business' });
    assert.equal(res.statusCode, 201);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['api_keys', 'tenant']);
    assert.equal(body.tenant.name, 'acme');
    assert.equal(body.tenant.plan, 'business');
    assert.equal(body.tenant.billing_state, 'accepting');
    assert.equal(body.tenant.account_context_enabled, true);
    assert.equal(body.api_keys.length, 2);
    const perms = body.api_keys.map((k: { permissions: string[] }) => [...k.permissions].sort());
    assert.deepEqual(perms, [['ingest'], ['ingest', 'manage_products', 'read', 'view_accounts']]);
    for (const k of body.api_keys) {
      assert.match(k.key, /^tk_live_[A-Za-z0-9_-]{43}$/);
      assert.ok(k.id);
    }
    // Stored only as a hash.
    const rows = await t.db.query<{ key_hash: string; prefix: string }>('SELECT key_hash, prefix FROM api_keys WHERE tenant_id = $1', [body.tenant.id]);
    for (const r of rows) for (const k of body.api_keys) assert.notEqual(r.key_hash, k.key);
    const shown = await admin('GET', `/admin/v1/tenants/${body.tenant.id}`);
    assert.ok(!shown.body.includes('tk_live_'), 'keys are shown once, at creation');
  });

  it('shows plan, billing state and usage; changes plan; cancels and reactivates', async () => {
    const created = (await admin('POST', '/admin/v1/tenants', { name: 'beta', plan: 'trial' })).json();
    const id = created.tenant.id;
    assert.ok(created.tenant.trial_ends_at, 'a trial has an end');
    const days = (Date.parse(created.tenant.trial_ends_at) - Date.parse(created.tenant.created_at)) / 86_400_000;
    assert.equal(Math.round(days), 21);
    const shown = (await admin('GET', `/admin/v1/tenants/${id}`)).json();
    assert.equal(shown.usage.allotment, 10_000);
    assert.equal(shown.usage.events, 0);
    assert.ok(Date.parse(shown.usage.period_end) > Date.parse(shown.usage.period_start));
    const patched = await admin('PATCH', `/admin/v1/tenants/${id}`, { plan: 'pro' });
    assert.equal(patched.statusCode, 200);
    assert.equal(patched.json().plan, 'pro');
    assert.equal(patched.json().usage.allotment, 1_000_000);
    const cancelled = (await admin('POST', `/admin/v1/tenants/${id}/subscription/cancel`)).json();
    assert.equal(cancelled.subscription_status, 'cancelled');
    assert.ok(cancelled.cancelled_at);
    const reactivated = (await admin('POST', `/admin/v1/tenants/${id}/subscription/reactivate`)).json();
    assert.equal(reactivated.subscription_status, 'active');
    assert.equal(reactivated.billing_state, 'accepting');
  });

  it('an upgrade to a plan with account views turns account context on (the new plan\'s default); an operator\'s "off" on such a plan stays', async () => {
    const created = (await admin('POST', '/admin/v1/tenants', { name: 'growing', plan: 'starter' })).json();
    const id = created.tenant.id;
    const key = created.api_keys.find((k: { permissions: string[] }) => k.permissions.length === 4).key;
    const accounts = () => t.app.inject({ method: 'GET', url: '/v1/accounts', headers: { authorization: `Bearer ${key}` } });
    assert.equal(created.tenant.account_context_enabled, false);
    assert.equal((await accounts()).statusCode, 402);
    const upgraded = (await admin('PATCH', `/admin/v1/tenants/${id}`, { plan: 'business' })).json();
    assert.equal(upgraded.account_context_enabled, true);
    assert.equal((await accounts()).statusCode, 200, 'docs/accounts.md: they see their data as soon as they upgrade');
    assert.equal((await admin('PATCH', `/admin/v1/tenants/${id}`, { account_context_enabled: false })).json().account_context_enabled, false);
    assert.equal((await admin('PATCH', `/admin/v1/tenants/${id}`, { plan: 'enterprise' })).json().account_context_enabled, false);
    assert.equal((await accounts()).statusCode, 403);
    const both = (await admin('PATCH', `/admin/v1/tenants/${id}`, { plan: 'starter' })).json();
    assert.equal(both.account_context_enabled, false);
    const explicit = (await admin('PATCH', `/admin/v1/tenants/${id}`, { plan: 'trial', account_context_enabled: false })).json();
    assert.equal(explicit.account_context_enabled, false, 'a setting in the same call wins');
  });

  it('refuses a bad plan or permission with validation_error naming the field', async () => {
    const res = await admin('POST', '/admin/v1/tenants', { name: 'x', plan: 'gold' });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().code, 'validation_error');
    assert.equal(res.json().errors[0].field, 'plan');
    const t1 = (await admin('POST', '/admin/v1/tenants', { name: 'x', plan: 'pro' })).json();
    const key = await admin('POST', `/admin/v1/tenants/${t1.tenant.id}/keys`, { permissions: ['root'] });
    assert.equal(key.statusCode, 400);
    assert.match(key.json().errors[0].field, /^permissions/);
  });

  it('needs the ADMIN_TOKEN', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/admin/v1/tenants', payload: { name: 'x', plan: 'pro' } });
    assert.equal(res.statusCode, 401);
  });
});

describe('admin CLI', () => {
  it('prints the same JSON as the API, on its own embedded store', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tally-cli-'));
    try {
      const env = { ...process.env, DATA_DIR: dir, DATABASE_URL: process.env.TEST_DATABASE_URL ?? '' };
      const cli = (...args: string[]) => run('npx', ['tsx', 'src/cli/admin.ts', ...args], { env });
      const created = JSON.parse((await cli('create-tenant', '--name', 'cli-co', '--plan', 'starter')).stdout);
      assert.deepEqual(Object.keys(created).sort(), ['api_keys', 'tenant']);
      assert.equal(created.tenant.plan, 'starter');
      const id = created.tenant.id;
      const key = JSON.parse((await cli('issue-key', id, '--permissions', 'read,ingest', '--name', 'ci')).stdout);
      assert.deepEqual(key.permissions, ['read', 'ingest']);
      assert.equal(JSON.parse((await cli('set-plan', id, 'business')).stdout).plan, 'business');
      assert.equal(JSON.parse((await cli('usage', id)).stdout).allotment, 10_000_000);
      assert.equal(JSON.parse((await cli('cancel', id)).stdout).subscription_status, 'cancelled');
      assert.equal(JSON.parse((await cli('reactivate', id)).stdout).subscription_status, 'active');
      assert.deepEqual(JSON.parse((await cli('revoke-key', id, key.id)).stdout), { revoked: key.id });
      await assert.rejects(cli('set-plan', id, 'gold'), /plan must be one of/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('calls a running server with --url', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address() as { port: number };
    const env = { ...process.env, ADMIN_TOKEN };
    const { stdout } = await run(
      'npx',
      ['tsx', 'src/cli/admin.ts', 'create-tenant', '--name', 'remote', '--plan', 'pro', '--url', `http://127.0.0.1:${address.port}`],
      { env },
    );
    const created = JSON.parse(stdout);
    const ingest = created.api_keys.find((k: { permissions: string[] }) => k.permissions.length === 1).key;
    // The key works against the same server (no product yet: the event is rejected, not unauthorized).
    assert.equal((await postEvents(t.app, ingest, [event()])).statusCode, 207);
  });
});
