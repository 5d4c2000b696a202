// Overload protection over app.inject against a real store. The pressure is real: a heap limit
// set below what the process uses, and an event loop blocked by a busy loop.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { event, openTestDb, postEvents, startTestApp, tenantWithProduct } from './helpers/app.js';

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('overload protection', () => {
  it('BAD-INPUTS 43: a heap past its limit turns ingestion and readiness into 503 with Retry-After; liveness stays up', async () => {
    const db = await openTestDb();
    const normal = await startTestApp({ db });
    const tenant = await tenantWithProduct(normal.app);
    await normal.close();
    const pressed = await startTestApp({ db, env: { MAX_HEAP_USED_BYTES: '1' } });
    try {
      await settle(400); // one sample of the heap
      const res = await postEvents(pressed.app, tenant.ingestKey, [event()]);
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().code, 'overloaded');
      assert.ok(Number(res.headers['retry-after']) >= 1);
      assert.equal(res.headers['access-control-allow-origin'], '*');
      assert.equal((await pressed.app.inject('/readyz')).statusCode, 503);
      assert.equal((await pressed.app.inject('/healthz')).statusCode, 200);
      assert.equal((await pressed.app.inject('/metrics')).statusCode, 200);
    } finally {
      await pressed.close();
      await db.close();
    }
  });

  it('BAD-INPUTS 43: a blocked event loop turns ingestion into 503 until it recovers', async () => {
    const t = await startTestApp({ env: { MAX_EVENT_LOOP_DELAY_MS: '100' } });
    try {
      const tenant = await tenantWithProduct(t.app);
      const until = Date.now() + 600;
      while (Date.now() < until) {
        // saturate the event loop
      }
      await settle(50);
      const res = await postEvents(t.app, tenant.ingestKey, [event()]);
      assert.equal(res.statusCode, 503);
      assert.equal((await t.app.inject('/healthz')).statusCode, 200);
      await settle(1500); // the delay histogram resets at the next samples
      assert.equal((await postEvents(t.app, tenant.ingestKey, [event()])).statusCode, 200);
    } finally {
      await t.close();
    }
  });
});
