// Time zone names over app.inject against a real store (PGlite, or PostgreSQL with TEST_DATABASE_URL): the server computes a
// range's local midnights with Intl and the store cuts buckets with AT TIME ZONE, so a name is taken only when both read it
// alike. Every name Intl knows (and the aliases and abbreviations clients send) is asked for: a 200 means the store's local
// time is Intl's at three instants (winter, summer, between the US's old and new spring change); a 400 names tz and means the
// store reads it otherwise or not at all. Nothing is faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { event, get, post, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';
import { assertProblem } from './helpers/verdicts.js';

let t: TestApp;
let key: string;

const ALIASES = [
  // Java's three-letter ids, which ICU keeps, and abbreviations PostgreSQL reads as fixed offsets.
  ...['ACT', 'AET', 'AGT', 'ART', 'AST', 'BET', 'BST', 'CAT', 'CNT', 'CST', 'CTT', 'EAT', 'ECT', 'IET', 'IST', 'JST', 'MIT', 'NET'],
  ...['NST', 'PLT', 'PNT', 'PRT', 'PST', 'SST', 'VST', 'EST', 'MST', 'HST', 'CET', 'EET', 'MET', 'WET', 'pst', 'Cet'],
  ...['SystemV/AST4', 'SystemV/AST4ADT', 'SystemV/EST5EDT', 'US/Pacific-New', 'Canada/East-Saskatchewan'],
  // tzdata's links and old names.
  ...['GB', 'Japan', 'EST5EDT', 'CST6CDT', 'PST8PDT', 'Asia/Kolkata', 'Asia/Calcutta', 'UCT', 'UTC', 'utc', 'GMT', 'GMT0', 'Zulu', 'ROK', 'PRC'],
  ...['NZ-CHAT', 'W-SU', 'Cuba', 'Eire', 'Israel', 'Singapore', 'America/Nuuk', 'Europe/Kyiv', 'Europe/Kiev', 'Asia/Kathmandu', 'US/Eastern'],
  ...['Etc/GMT+5', 'Etc/GMT-14', 'Australia/ACT', 'America/Argentina/Buenos_Aires', 'America/Buenos_Aires', 'Atlantic/Faroe'],
];
const INSTANTS = ['2026-01-15T12:00:00Z', '2026-07-15T12:00:00Z', '2026-03-29T01:30:00Z'];

/** Local wall time at `at` in `tz`, as Intl reads it, in the store's to_char format. */
function intlLocal(tz: string, at: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
  })
    .formatToParts(new Date(at))
    .map((p) => [p.type, p.value]);
  const p = Object.fromEntries(parts) as Record<string, string>;
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}`;
}

/** Local wall time at `at` in `tz`, as the store reads it; undefined when it does not know the name. */
async function storeLocal(tz: string, at: string): Promise<string | undefined> {
  try {
    const [row] = await t.db.query<{ l: string }>(`SELECT to_char($1::timestamptz AT TIME ZONE $2, 'YYYY-MM-DD HH24:MI') AS l`, [at, tz]);
    return row!.l;
  } catch {
    return undefined;
  }
}

before(async () => {
  t = await startTestApp();
  const tenant = await tenantWithProduct(t.app, 'business');
  key = tenant.adminKey;
  assert.equal((await postEvents(t.app, tenant.ingestKey, [event({ actor_id: 'a1' })])).statusCode, 200);
});
after(async () => t.close());

describe('time zone names', () => {
  it('every name is taken exactly when the store reads it as Intl does, and refused naming tz otherwise (never a 500)', async () => {
    const known = (n: string) => {
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: n });
        return true;
      } catch {
        return false;
      }
    };
    const names = [...new Set([...Intl.supportedValuesOf('timeZone'), ...ALIASES])].filter(known);
    assert.ok(names.length > 400, `${names.length} names`);
    const refused: string[] = [];
    for (const tz of names) {
      const res = await get(t.app, key, `/v1/reports/trends?range=7d&tz=${encodeURIComponent(tz)}`);
      const alike = await Promise.all(INSTANTS.map(async (at) => (await storeLocal(tz, at)) === intlLocal(tz, at)));
      if (res.statusCode === 200) {
        assert.ok(
          alike.every(Boolean),
          `${tz} is taken but the store reads it otherwise: ${INSTANTS.map((at) => `${at} Intl ${intlLocal(tz, at)}`).join(', ')}`,
        );
      } else {
        assertProblem(res, 400, 'validation_error');
        assert.deepEqual(
          res.json<{ errors: { field: string }[] }>().errors.map((e) => e.field),
          ['tz'],
        );
        assert.ok(!alike.every(Boolean), `${tz} is refused but the store reads it as Intl does`);
        refused.push(tz);
      }
    }
    // The abbreviations and Java ids the helper's fuzzing found (a 500, or buckets cut at other hours) are among them.
    for (const tz of ['AET', 'BST', 'IST', 'PST', 'pst', 'CET', 'SystemV/EST5EDT', 'US/Pacific-New']) assert.ok(refused.includes(tz), tz);
  });

  it('a refused name is a 400 naming tz on every query that takes one, the bodies and a saved definition too', async () => {
    const tz = encodeURIComponent('AET');
    for (const path of [
      `/v1/reports/trends?tz=${tz}`,
      `/v1/reports/active-actors?tz=${tz}`,
      `/v1/reports/versions?product=app&tz=${tz}`,
      `/v1/reports/accounts?tz=${tz}`,
      `/v1/sessions/stats?tz=${tz}`,
      `/v1/sessions/release-health?tz=${tz}`,
      `/v1/environment/os?tz=${tz}`,
      `/v1/exceptions?tz=${tz}`,
      `/v1/events?tz=${tz}`,
      `/v1/paths?category=ui&name=click&tz=${tz}`,
    ]) {
      const res = await get(t.app, key, path);
      assertProblem(res, 400, 'validation_error');
      assert.deepEqual(
        res.json<{ errors: { field: string }[] }>().errors.map((e) => e.field),
        ['tz'],
        path,
      );
    }
    const funnel = await post(t.app, key, '/v1/funnels', {
      tz: 'PST',
      steps: [
        { category: 'ui', name: 'a' },
        { category: 'ui', name: 'b' },
      ],
    });
    assertProblem(funnel, 400, 'validation_error');
    assert.match(funnel.body, /"field":"tz"/);
    const retention = await post(t.app, key, '/v1/retention', { tz: 'CET' });
    assertProblem(retention, 400, 'validation_error');
    assert.match(retention.body, /"field":"tz"/);
    const segment = await post(t.app, key, '/v1/segments', { name: 's', definition: { tz: 'IST' } });
    assertProblem(segment, 400, 'validation_error');
    assert.match(segment.body, /"field":"definition.tz"/);
  });
});
