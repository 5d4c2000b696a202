// identify's optional traits over app.inject against a real store (PGlite, or PostgreSQL at TEST_DATABASE_URL), read back through GET /v1/accounts/{id}/actors after a real rollup run; nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { event, foldReadModel, get, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString();

function identify(key: string, body: Record<string, unknown>) {
  return t.app.inject({
    method: 'POST',
    url: '/v1/actors/identify',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ identified_at: '2026-01-02T03:04:05.000Z', product: 'app', product_version: null, ...body }),
  });
}

async function actors(adminKey: string): Promise<{ actor_id: string; traits: Record<string, unknown> | null }[]> {
  await foldReadModel(t.db);
  const res = await get(t.app, adminKey, '/v1/accounts/acme/actors');
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data;
}

describe('identify traits', () => {
  it('keeps the newest traits per identified actor and shows them in the account actors, where a linked anonymous actor counts as its user', async () => {
    const tn = await tenantWithProduct(t.app, 'business');
    const posted = await postEvents(
      t.app,
      tn.ingestKey,
      ['anon-1', 'user-1', 'user-2'].map((actor_id) => event({ actor_id, account_id: 'acme', timestamp: hourAgo() })),
    );
    assert.equal(posted.statusCode, 200, posted.body);
    const first = await identify(tn.ingestKey, { anonymous_actor_id: 'anon-1', identified_actor_id: 'user-1', traits: { plan: 'pro', seats: 5, admin: true } });
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(first.json(), { status: 'accepted' }, "the answer is the contract's, traits or not");
    // The same user from a second device, later: its traits replace the first ones.
    const later = await identify(tn.ingestKey, {
      anonymous_actor_id: 'anon-2',
      identified_actor_id: 'user-1',
      identified_at: '2026-01-03T00:00:00Z',
      traits: { plan: 'business', seats: 9 },
    });
    assert.equal(later.statusCode, 200, later.body);
    // A retry of an older identify arriving late does not undo the newer traits.
    const stale = await identify(tn.ingestKey, {
      anonymous_actor_id: 'anon-3',
      identified_actor_id: 'user-1',
      identified_at: '2026-01-01T00:00:00Z',
      traits: { plan: 'trial' },
    });
    assert.equal(stale.statusCode, 200, stale.body);
    // identify without traits (the contract's shape) leaves them alone.
    assert.equal(
      (await identify(tn.ingestKey, { anonymous_actor_id: 'anon-4', identified_actor_id: 'user-1', identified_at: '2026-01-04T00:00:00Z' })).statusCode,
      200,
    );

    const rows = await actors(tn.adminKey);
    assert.deepEqual(
      rows.map((r) => [r.actor_id, r.traits]),
      // anon-1 is linked to user-1: the read model counts it once, as user-1 (CONTRACT.md).
      [
        ['user-1', { plan: 'business', seats: 9 }],
        ['user-2', null],
      ],
    );
  });

  it('a 409 (the anonymous id is linked to another user) keeps no traits', async () => {
    const tn = await tenantWithProduct(t.app, 'business');
    assert.equal((await postEvents(t.app, tn.ingestKey, [event({ actor_id: 'user-b', account_id: 'acme', timestamp: hourAgo() })])).statusCode, 200);
    assert.equal((await identify(tn.ingestKey, { anonymous_actor_id: 'anon', identified_actor_id: 'user-a' })).statusCode, 200);
    const conflict = await identify(tn.ingestKey, { anonymous_actor_id: 'anon', identified_actor_id: 'user-b', traits: { plan: 'pro' } });
    assert.equal(conflict.statusCode, 409, conflict.body);
    assert.deepEqual(
      (await actors(tn.adminKey)).map((r) => [r.actor_id, r.traits]),
      [['user-b', null]],
    );
  });

  it('traits follow the rules of event properties: 422 validation_error naming the field, kept as a dead letter', async () => {
    const tn = await tenantWithProduct(t.app);
    const cases: [unknown, string][] = [
      [{ address: { city: 'Oslo' } }, 'traits.address'],
      [{ tags: ['a'] }, 'traits.tags'],
      [{ nothing: null }, 'traits.nothing'],
      [{ name: 'x'.repeat(257) }, 'traits.name'],
      [Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, i])), 'traits'],
      [{ ['k'.repeat(65)]: 1 }, `traits.${'k'.repeat(65)}`],
      [{ account_id: 'acme' }, 'traits.account_id'],
      [{ big: 2 ** 60 }, 'traits.big'],
      [{ bad: 'a\u0000b' }, 'traits.bad'],
      ['pro', 'traits'],
      [[1, 2], 'traits'],
    ];
    for (const [traits, field] of cases) {
      const res = await identify(tn.ingestKey, { anonymous_actor_id: 'anon-x', identified_actor_id: 'user-x', traits });
      assert.equal(res.statusCode, 422, `${JSON.stringify(traits).slice(0, 60)}: ${res.body}`);
      const body = res.json();
      assert.equal(body.code, 'validation_error');
      assert.equal(body.errors?.[0]?.field, field, res.body);
    }
    const [dead] = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM invalid_events WHERE tenant_id = $1 AND kind = 'identify'", [tn.id]);
    assert.equal(dead!.n, cases.length);
    const ok = await identify(tn.ingestKey, { anonymous_actor_id: 'anon-x', identified_actor_id: 'user-x', traits: null });
    assert.equal(ok.statusCode, 200, 'null traits are no traits');
  });
});
