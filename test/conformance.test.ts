// Statements of CONTRACT.md and SPEC.md checked one by one over app.inject against a real store
// (PGlite, or PostgreSQL at TEST_DATABASE_URL); nothing is faked. Each test names its line.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rollupJob } from '../src/jobs/rollups.js';
import { startJobs } from '../src/jobs/runner.js';
import { event, post, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

const HOUR = 3_600_000;

/** Runs the rollup job once (the read model's fold), as its timer would. */
async function fold(): Promise<void> {
  const jobs = startJobs(t.db, [rollupJob(60)], { warn() {}, info() {}, error() {} } as never);
  try {
    for (let i = 0; i < 50 && !(await jobs.runOnce('rollups')); i++) await new Promise((r) => setTimeout(r, 100));
  } finally {
    await jobs.stop();
  }
}

describe('CONTRACT.md, Accounts and licenses: "?limit= (default 50, max 500) … The same pagination everywhere in the API"', () => {
  it('the drill-down lists of funnels and retention (POST bodies) default to 50 rows, take 500, refuse 501', async () => {
    const tenant = await tenantWithProduct(t.app, 'business');
    const at = new Date(Date.now() - HOUR).toISOString();
    const actors = Array.from({ length: 51 }, (_, i) => `u${String(i).padStart(2, '0')}`);
    const batch = actors.flatMap((a) => [event({ actor_id: a, name: 'open', timestamp: at }), event({ actor_id: a, name: 'pay', timestamp: at })]);
    assert.equal((await postEvents(t.app, tenant.ingestKey, batch)).statusCode, 200);
    await fold();
    const steps = [
      { category: 'ui', name: 'open' },
      { category: 'ui', name: 'pay' },
    ];
    const lists: [string, Record<string, unknown>][] = [
      ['/v1/funnels/actors', { steps, step: 1 }],
      ['/v1/retention/actors', { cohort: 0, cohort_period: 0, period: 'day', periods: 1, from: at.slice(0, 10) }],
    ];
    for (const [url, body] of lists) {
      const first = await post(t.app, tenant.adminKey, url, body);
      assert.equal(first.statusCode, 200, `${url}: ${first.body}`);
      assert.equal(first.json().data.length, 50, url);
      assert.equal(typeof first.json().next_cursor, 'string', url);
      const rest = await post(t.app, tenant.adminKey, url, { ...body, cursor: first.json().next_cursor });
      assert.equal(rest.json().data.length, 1, url);
      assert.equal(rest.json().next_cursor, null, url);
      const all = await post(t.app, tenant.adminKey, url, { ...body, limit: 500 });
      assert.equal(all.json().data.length, 51, url);
      assert.equal(all.json().next_cursor, null, url);
      const over = await post(t.app, tenant.adminKey, url, { ...body, limit: 501 });
      assert.equal(over.statusCode, 400, url);
      assert.equal(over.json().code, 'validation_error', url);
    }
  });
});
