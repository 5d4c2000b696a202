// BAD-INPUTS.md 1–6 over app.inject and, where framing or timeouts matter, a real socket; real app, real store (PGlite, or PostgreSQL at TEST_DATABASE_URL); nothing faked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { ADMIN_TOKEN, countStored, event, postEvents, startTestApp, tenantWithProduct, type TestApp } from './helpers/app.js';
import { assertProblem, deadLetterReasons } from './helpers/verdicts.js';

const MiB = 1_048_576;

/** node:http reads this at listen time; @types/node knows it only as a createServer option. */
type CheckedServer = http.Server & { connectionsCheckingInterval: number };

let t: TestApp;
before(async () => (t = await startTestApp()));
after(async () => t.close());

/** Nothing at all was written for the tenant: no event and no dead letter. */
async function assertNothingStored(tenantId: string): Promise<void> {
  assert.equal(await countStored(t.db, tenantId), 0);
  assert.deepEqual(await deadLetterReasons(t.db, tenantId), []);
}

/**
 * A valid batch body of exactly `bytes` bytes of UTF-8: as many events as fit, each carrying three
 * 256-char property values of `fill`, then spaces before the closing bracket to make up the rest.
 */
function bodyOfExactly(bytes: number, fill: string): { body: string; events: number } {
  const items: string[] = [];
  let size = 2; // [ ]
  for (;;) {
    const item = JSON.stringify(event({ properties: { a: fill.repeat(256), b: fill.repeat(256), c: fill.repeat(256) } }));
    const added = Buffer.byteLength(item) + (items.length > 0 ? 1 : 0);
    if (items.length === 1000 || size + added > bytes) break;
    items.push(item);
    size += added;
  }
  const body = `[${items.join(',')}${' '.repeat(bytes - size)}]`;
  assert.equal(Buffer.byteLength(body), bytes);
  return { body, events: items.length };
}

interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

/** POST /v1/events over a real socket with no Content-Length: node:http sends the chunks with Transfer-Encoding: chunked. */
function postChunked(port: number, key: string, chunks: string[]): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/events',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ statusCode: res.statusCode!, headers: res.headers, body }));
    });
    for (const c of chunks) req.write(c);
    req.end();
  });
}

/**
 * Streams an endless chunked body (`[` then spaces, honouring backpressure) and never ends it:
 * the answer can only come from a server that judges the size as the bytes arrive.
 * Returns the answer and how many bytes had been handed to the socket when it came.
 */
function streamWithoutEnd(port: number, key: string, capBytes: number): Promise<Answer & { sentBeforeAnswer: number }> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = http.request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/v1/events',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer after ${sent} bytes streamed`));
    }, 20_000);
    req.on('error', (err) => {
      if (!answered) {
        clearTimeout(timer);
        reject(err);
      }
    });
    req.on('response', (res) => {
      answered = true;
      const sentBeforeAnswer = sent;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ statusCode: res.statusCode!, headers: res.headers, body, sentBeforeAnswer });
      });
    });
    const chunk = Buffer.alloc(64 * 1024, ' ');
    req.write('[');
    sent = 1;
    const pump = (): void => {
      while (!answered && sent < capBytes) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
    };
    pump();
  });
}

describe('BAD-INPUTS transport and framing (lines 1–6)', () => {
  it('BAD-INPUTS 1: a non-JSON or truncated body is 400 invalid_batch and nothing is stored', async () => {
    const tenant = await tenantWithProduct(t.app);
    const good = JSON.stringify([event(), event()]);
    const bodies = [
      'not json',
      good.slice(0, Math.floor(good.length / 2)), // cut in the middle of an element
      good.slice(0, -1), // the closing bracket missing
      `[${JSON.stringify(event())},]`, // trailing comma
      `${good}${good}`, // two arrays back to back
      '',
    ];
    for (const body of bodies) {
      const res = await postEvents(t.app, tenant.ingestKey, body);
      assertProblem(res, 400, 'invalid_batch');
    }
    await assertNothingStored(tenant.id);
  });

  it('a request without a body but with Content-Type: application/json is answered as one without the header (a client that sets it on every request)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const json = { 'content-type': 'application/json' };
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, ...json };
    const key = await t.app.inject({
      method: 'POST',
      url: `/admin/v1/tenants/${tenant.id}/keys`,
      headers: admin,
      payload: { name: 'spare', permissions: ['read'] },
    });
    assert.equal(key.statusCode, 201, key.body);
    for (const body of ['', ' \r\n']) {
      // Routes without a body: the same answer as without the header.
      const cancel = await t.app.inject({ method: 'POST', url: `/admin/v1/tenants/${tenant.id}/subscription/cancel`, headers: admin, body });
      assert.equal(cancel.statusCode, 200, cancel.body);
      const reactivate = await t.app.inject({ method: 'POST', url: `/admin/v1/tenants/${tenant.id}/subscription/reactivate`, headers: admin, body });
      assert.equal(reactivate.statusCode, 200, reactivate.body);
      assert.equal(reactivate.json<{ billing_state: string }>().billing_state, 'accepting');
      // Routes that need a body say so, naming it; a batch's empty body is still invalid_batch (BAD-INPUTS 1).
      const start = await t.app.inject({ method: 'POST', url: '/v1/events/sessions', headers: { authorization: `Bearer ${tenant.ingestKey}`, ...json }, body });
      assertProblem(start, 422, 'validation_error');
      assert.deepEqual(
        start.json<{ errors: { field: string }[] }>().errors.map((e) => e.field),
        ['body'],
      );
      const product = await t.app.inject({ method: 'POST', url: '/v1/products', headers: { authorization: `Bearer ${tenant.adminKey}`, ...json }, body });
      assertProblem(product, 400, 'validation_error');
      assert.deepEqual(
        product.json<{ errors: { field: string }[] }>().errors.map((e) => e.field),
        ['body'],
      );
      assertProblem(await postEvents(t.app, tenant.ingestKey, body), 400, 'invalid_batch');
    }
    const revoke = await t.app.inject({
      method: 'DELETE',
      url: `/admin/v1/tenants/${tenant.id}/keys/${key.json<{ id: string }>().id}`,
      headers: admin,
      body: '',
    });
    assert.equal(revoke.statusCode, 204, revoke.body);
    const remove = await t.app.inject({
      method: 'DELETE',
      url: `/v1/products/${tenant.productId}`,
      headers: { authorization: `Bearer ${tenant.adminKey}`, ...json },
      body: '',
    });
    assert.equal(remove.statusCode, 202, remove.body);
    assert.equal(await countStored(t.db, tenant.id), 0);
  });

  it('BAD-INPUTS 2: an object, a scalar, null, [] or 1001 elements is 400 invalid_batch; nothing stored', async () => {
    const tenant = await tenantWithProduct(t.app);
    const bodies = [
      JSON.stringify(event()), // one event, not wrapped in an array
      JSON.stringify({ events: [event()] }),
      '[]',
      'null',
      '42',
      '"[]"',
      'true',
      JSON.stringify(Array.from({ length: 1001 }, () => event())),
    ];
    for (const body of bodies) {
      const res = await postEvents(t.app, tenant.ingestKey, body);
      assertProblem(res, 400, 'invalid_batch');
    }
    await assertNothingStored(tenant.id);
  });

  it('BAD-INPUTS 2: a batch of exactly 1000 events is accepted whole', async () => {
    const tenant = await tenantWithProduct(t.app);
    const batch = Array.from({ length: 1000 }, () => event());
    const res = await postEvents(t.app, tenant.ingestKey, batch);
    assert.equal(res.statusCode, 200, res.body.slice(0, 300));
    const body = res.json();
    assert.equal(body.accepted, 1000);
    assert.equal(body.rejected, 0);
    assert.equal(body.results.length, 1000);
    assert.equal(await countStored(t.db, tenant.id), 1000);
  });

  it('BAD-INPUTS 3: a body of exactly 1,048,576 bytes is processed; one more byte is 413 (ASCII and 3-byte text)', async () => {
    for (const fill of ['x', '中']) {
      const tenant = await tenantWithProduct(t.app);
      const exact = bodyOfExactly(MiB, fill);
      const res = await postEvents(t.app, tenant.ingestKey, exact.body);
      assert.equal(res.statusCode, 200, `${fill}: ${res.body.slice(0, 300)}`);
      assert.equal(res.json().accepted, exact.events);
      assert.equal(await countStored(t.db, tenant.id), exact.events);

      const other = await tenantWithProduct(t.app);
      const over = bodyOfExactly(MiB + 1, fill);
      assertProblem(await postEvents(t.app, other.ingestKey, over.body), 413, 'payload_too_large');
      await assertNothingStored(other.id);
    }
  });

  describe('over a real socket, chunked (no Content-Length)', () => {
    let port: number;
    before(async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.server.address() as AddressInfo).port;
    });

    it('BAD-INPUTS 3: a chunked body of exactly 1,048,576 bytes is processed; one more byte is 413', async () => {
      const tenant = await tenantWithProduct(t.app);
      const exact = bodyOfExactly(MiB, 'é');
      const chunks = [];
      for (let i = 0; i < exact.body.length; i += 100_000) chunks.push(exact.body.slice(i, i + 100_000));
      const ok = await postChunked(port, tenant.ingestKey, chunks);
      assert.equal(ok.statusCode, 200, ok.body.slice(0, 300));
      assert.equal(JSON.parse(ok.body).accepted, exact.events);
      assert.equal(await countStored(t.db, tenant.id), exact.events);

      const other = await tenantWithProduct(t.app);
      const over = bodyOfExactly(MiB + 1, 'é').body;
      const tooBig = await postChunked(port, other.ingestKey, [over.slice(0, 500_000), over.slice(500_000)]);
      assertProblem(tooBig, 413, 'payload_too_large');
      await assertNothingStored(other.id);
    });

    it('BAD-INPUTS 3: an endless chunked body gets 413 while it is still arriving (the server does not read to its end)', async () => {
      const tenant = await tenantWithProduct(t.app);
      const cap = 64 * MiB;
      const res = await streamWithoutEnd(port, tenant.ingestKey, cap);
      assertProblem(res, 413, 'payload_too_large');
      // Loopback socket buffers hold a few MiB; a server that buffered the body would need all 64.
      assert.ok(res.sentBeforeAnswer < 16 * MiB, `answered only after ${res.sentBeforeAnswer} bytes`);
      await assertNothingStored(tenant.id);
    });
  });

  it('BAD-INPUTS 4: Content-Encoding gzip (also when it inflates past 1 MiB), deflate or br is 415; nothing stored', async () => {
    const tenant = await tenantWithProduct(t.app);
    const small = gzipSync(JSON.stringify([event()]));
    const bomb = gzipSync(`[${JSON.stringify(event())}${' '.repeat(4 * MiB)}]`); // a few KiB that inflate to 4 MiB
    assert.ok(bomb.length < 64 * 1024);
    const cases: [string, Buffer][] = [
      ['gzip', small],
      ['gzip', bomb],
      ['GZIP', small],
      ['deflate', small],
      ['br', small],
    ];
    for (const [encoding, payload] of cases) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/events',
        headers: { authorization: `Bearer ${tenant.ingestKey}`, 'content-type': 'application/json', 'content-encoding': encoding },
        payload,
      });
      assertProblem(res, 415, 'unsupported_media_type');
    }
    await assertNothingStored(tenant.id);

    // The boundary: an explicit identity encoding is plain JSON.
    const plain = await postEvents(t.app, tenant.ingestKey, [event()], { headers: { 'content-encoding': 'identity' } });
    assert.equal(plain.statusCode, 200, plain.body);
    assert.equal(await countStored(t.db, tenant.id), 1);
  });

  it('a body whose bytes are not UTF-8 is a 400 naming body on the routes that take one record or a setting (it was stored with U+FFFD)', async () => {
    const tenant = await tenantWithProduct(t.app);
    const bytes = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('","definition":{}}')]);
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/segments',
      headers: { authorization: `Bearer ${tenant.adminKey}`, 'content-type': 'application/json' },
      payload: bytes,
    });
    assertProblem(res, 400, 'validation_error');
    assert.deepEqual(res.json<{ errors: { field: string; message: string }[] }>().errors, [{ field: 'body', message: 'is not valid UTF-8' }]);
    const list = await t.app.inject({ method: 'GET', url: '/v1/segments', headers: { authorization: `Bearer ${tenant.adminKey}` } });
    assert.deepEqual(list.json<{ data: unknown[] }>().data, []);
    // Valid UTF-8 beyond ASCII is taken as sent.
    const ok = await t.app.inject({
      method: 'POST',
      url: '/v1/segments',
      headers: { authorization: `Bearer ${tenant.adminKey}`, 'content-type': 'application/json' },
      payload: Buffer.from(JSON.stringify({ name: 'naïve 😀', definition: {} })),
    });
    assert.equal(ok.statusCode, 201, ok.body);
    assert.equal(ok.json<{ name: string }>().name, 'naïve 😀');
  });

  it('a compressed body is 415 on every route, not only ingestion: read as JSON it was a 400 "not valid JSON", and a plain body under the header was taken', async () => {
    const tenant = await tenantWithProduct(t.app);
    const segment = JSON.stringify({ name: 's', definition: { range: '7d' } });
    for (const [encoding, payload] of [
      ['gzip', gzipSync(segment)],
      ['br', Buffer.from(segment)],
    ] as const) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/segments',
        headers: { authorization: `Bearer ${tenant.adminKey}`, 'content-type': 'application/json', 'content-encoding': encoding },
        payload,
      });
      assertProblem(res, 415, 'unsupported_media_type');
    }
    // The key is judged first; a request without a body is not refused for the header.
    const anonymous = await t.app.inject({
      method: 'POST',
      url: '/v1/segments',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(segment),
    });
    assertProblem(anonymous, 401, 'unauthorized');
    const list = await t.app.inject({
      method: 'GET',
      url: '/v1/segments',
      headers: { authorization: `Bearer ${tenant.adminKey}`, 'content-encoding': 'gzip' },
    });
    assert.equal(list.statusCode, 200, list.body);
    const plain = await t.app.inject({
      method: 'POST',
      url: '/v1/segments',
      headers: { authorization: `Bearer ${tenant.adminKey}`, 'content-type': 'application/json', 'content-encoding': 'identity' },
      payload: segment,
    });
    assert.equal(plain.statusCode, 201, plain.body);
  });

  it('BAD-INPUTS 5: a valid batch sent as text/plain, a form or multipart is 415 and never parsed as events', async () => {
    const tenant = await tenantWithProduct(t.app);
    const batch = JSON.stringify([event()]);
    const cases: [string, string][] = [
      ['text/plain', batch],
      ['text/plain; charset=utf-8', batch],
      ['application/x-www-form-urlencoded', `events=${encodeURIComponent(batch)}`],
      ['application/x-www-form-urlencoded', batch],
      ['multipart/form-data; boundary=XyZ', `--XyZ\r\nContent-Disposition: form-data; name="events"\r\n\r\n${batch}\r\n--XyZ--\r\n`],
    ];
    for (const [type, payload] of cases) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/events',
        headers: { authorization: `Bearer ${tenant.ingestKey}`, 'content-type': type },
        payload,
      });
      assertProblem(res, 415, 'unsupported_media_type');
    }
    await assertNothingStored(tenant.id);

    // The boundary: application/json with a charset parameter is the ingestion format.
    const json = await postEvents(t.app, tenant.ingestKey, batch, { headers: { 'content-type': 'application/json; charset=utf-8' } });
    assert.equal(json.statusCode, 200, json.body);
    assert.equal(await countStored(t.db, tenant.id), 1);
  });
});

describe('BAD-INPUTS 6: slow clients', () => {
  // The production bound (30 s) is too long to wait for: this app is built with a short
  // requestTimeoutMs, which must bound headers and body alike, and be enforced promptly.
  const TIMEOUT_MS = 1000;
  let slow: TestApp;
  let port: number;
  before(async () => {
    slow = await startTestApp({ requestTimeoutMs: TIMEOUT_MS });
    await slow.app.listen({ port: 0, host: '127.0.0.1' });
    port = (slow.app.server.address() as AddressInfo).port;
  });
  after(async () => slow.close());

  /** Opens a socket, writes `head`, then one byte of `drip` every 100 ms until the server closes it. */
  function trickle(head: string, drip: string): Promise<{ closedAfterMs: number; received: string }> {
    return new Promise((resolve, reject) => {
      const started = Date.now();
      const socket = net.connect(port, '127.0.0.1');
      let received = '';
      let ticks = 0;
      const timer = setInterval(() => {
        if (++ticks > 150) {
          clearInterval(timer);
          socket.destroy();
          reject(new Error('the server kept a trickling connection open for 15 s'));
          return;
        }
        if (socket.writable) socket.write(drip);
      }, 100);
      socket.on('data', (d) => (received += d.toString('latin1')));
      socket.on('error', () => undefined); // a reset is one way to close
      socket.on('close', () => {
        clearInterval(timer);
        resolve({ closedAfterMs: Date.now() - started, received });
      });
      socket.write(head);
    });
  }

  it('BAD-INPUTS 6: the app bounds how long a request may take to arrive', async () => {
    const prod = await startTestApp();
    try {
      const server = prod.app.server as CheckedServer;
      assert.ok(server.requestTimeout > 0 && server.requestTimeout <= 60_000, `requestTimeout ${server.requestTimeout}`);
      assert.ok(server.headersTimeout > 0 && server.headersTimeout <= 60_000, `headersTimeout ${server.headersTimeout}`);
      assert.ok(server.connectionsCheckingInterval > 0 && server.connectionsCheckingInterval <= 30_000);
    } finally {
      await prod.close();
    }
  });

  it('BAD-INPUTS 6: slow headers: the connection is closed after the request timeout', async () => {
    const tenant = await tenantWithProduct(slow.app);
    const r = await trickle(`POST /v1/events HTTP/1.1\r\nHost: tally\r\nAuthorization: Bearer ${tenant.ingestKey}\r\nX-Slow: `, 'a');
    assert.ok(r.closedAfterMs >= TIMEOUT_MS - 100, `closed too early (${r.closedAfterMs} ms): ${r.received}`);
    assert.ok(r.closedAfterMs < TIMEOUT_MS + 3000, `closed after ${r.closedAfterMs} ms`);
    if (r.received) assert.match(r.received, /^HTTP\/1\.1 408 /);
    assert.equal(await countStored(slow.db, tenant.id), 0);
  });

  it('BAD-INPUTS 6: the answer written before a slow request is cut off is a problem+json 408', async () => {
    // CONTRACT.md: every non-2xx body is RFC 9457 problem details with a code.
    const tenant = await tenantWithProduct(slow.app);
    const heads = [
      `POST /v1/events HTTP/1.1\r\nHost: tally\r\nX-Slow: `,
      `POST /v1/events HTTP/1.1\r\nHost: tally\r\nAuthorization: Bearer ${tenant.ingestKey}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n[`,
    ];
    for (const head of heads) {
      const r = await trickle(head, ' ');
      if (!r.received) continue; // closing without a word is also allowed
      const [headers = '', body = ''] = r.received.split('\r\n\r\n');
      assert.match(headers, /^HTTP\/1\.1 408 /);
      assert.match(headers, /\r\ncontent-type: application\/problem\+json/i, headers);
      assert.equal(typeof JSON.parse(body).code, 'string', body);
      // A browser sees it too: the CORS headers of the ingestion routes' errors (CONTRACT.md).
      assert.match(headers, /\r\naccess-control-allow-origin: \*/i, headers);
      assert.match(headers, /\r\naccess-control-expose-headers: retry-after/i, headers);
    }
  });

  it('BAD-INPUTS 6: a slow body: the connection is closed after the request timeout and nothing is stored', async () => {
    const tenant = await tenantWithProduct(slow.app);
    const head =
      `POST /v1/events HTTP/1.1\r\nHost: tally\r\nAuthorization: Bearer ${tenant.ingestKey}\r\n` +
      `Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n[${JSON.stringify(event())}`;
    const r = await trickle(head, ' ');
    assert.ok(r.closedAfterMs >= TIMEOUT_MS - 100, `closed too early (${r.closedAfterMs} ms): ${r.received}`);
    assert.ok(r.closedAfterMs < TIMEOUT_MS + 3000, `closed after ${r.closedAfterMs} ms`);
    assert.doesNotMatch(r.received, /^HTTP\/1\.1 2/);
    assert.equal(await countStored(slow.db, tenant.id), 0);
    assert.deepEqual(await deadLetterReasons(slow.db, tenant.id), []);
  });
});

describe('Expect: 100-continue (CONTRACT.md "Browser clients": 401 and 402 from the headers)', () => {
  // Two listening apps on the same store: `now` and 22 days later, when a trial has expired.
  let today: TestApp;
  let later: TestApp;
  const ports: number[] = [];
  before(async () => {
    today = await startTestApp({ db: t.db });
    later = await startTestApp({ db: t.db, now: () => new Date(Date.now() + 22 * 86_400_000) });
    for (const app of [today, later]) {
      await app.app.listen({ port: 0, host: '127.0.0.1' });
      ports.push((app.app.server.address() as AddressInfo).port);
    }
  });
  after(async () => Promise.all([today.close(), later.close()]));

  /**
   * Sends a batch's headers with Expect: 100-continue and holds its body back. Returns the first
   * thing the server wrote; the body follows only if that was "100 Continue", then the final answer.
   */
  function expectContinue(port: number, key: string, body: string, declared = Buffer.byteLength(body)): Promise<{ first: string; final: string }> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      let received = '';
      let first: string | undefined;
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no final answer in 10 s: ${received}`));
      }, 10_000);
      socket.on('error', () => undefined);
      socket.on('data', (d) => {
        received += d.toString('latin1');
        if (first === undefined) {
          first = received.split('\r\n')[0]!;
          if (first.startsWith('HTTP/1.1 100 ')) {
            received = received.slice(received.indexOf('\r\n\r\n') + 4);
            socket.write(body);
          }
        }
        const head = received.indexOf('\r\n\r\n');
        const length = /\r\ncontent-length: *(\d+)/i.exec(received.slice(0, head))?.[1];
        if (head >= 0 && length !== undefined && received.length >= head + 4 + Number(length) && !received.startsWith('HTTP/1.1 100 ')) {
          clearTimeout(timer);
          socket.destroy();
          resolve({ first: first!, final: received });
        }
      });
      socket.write(
        `POST /v1/events HTTP/1.1\r\nHost: tally\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${declared}\r\nExpect: 100-continue\r\n\r\n`,
      );
    });
  }
  const status = (line: string) => Number(line.split(' ')[1]);
  const code = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).code;

  it('a batch the server takes: "100 Continue", then the body, then 200 and the event stored', async () => {
    const tenant = await tenantWithProduct(today.app);
    const res = await expectContinue(ports[0]!, tenant.ingestKey, JSON.stringify([event()]));
    assert.match(res.first, /^HTTP\/1\.1 100 /);
    assert.equal(status(res.final), 200, res.final);
    assert.equal(await countStored(t.db, tenant.id), 1);
  });

  it('an unknown key: 401 at once, no "100 Continue", so the client never uploads the body', async () => {
    const res = await expectContinue(ports[0]!, 'tk_live_not_a_key', bodyOfExactly(MiB, 'x').body);
    assert.equal(status(res.first), 401, res.final);
    assert.equal(code(res.final), 'unauthorized');
  });

  it('a tenant whose trial has expired: 402 billing_blocked at once, no "100 Continue"', async () => {
    const tenant = await tenantWithProduct(today.app, 'trial');
    const res = await expectContinue(ports[1]!, tenant.ingestKey, JSON.stringify([event()]));
    assert.equal(status(res.first), 402, res.final);
    assert.equal(code(res.final), 'billing_blocked');
    await assertNothingStored(tenant.id);
  });

  it('a declared body over 1 MiB: 413 from Content-Length, no "100 Continue"', async () => {
    const tenant = await tenantWithProduct(today.app);
    const res = await expectContinue(ports[0]!, tenant.ingestKey, '[]', MiB + 1);
    assert.equal(status(res.first), 413, res.final);
    assert.equal(code(res.final), 'payload_too_large');
    await assertNothingStored(tenant.id);
  });
});

describe('framing over a real socket: what a client sends that Node reads before Fastify', () => {
  let wire: TestApp;
  let port: number;
  before(async () => {
    wire = await startTestApp({ db: t.db });
    await wire.app.listen({ port: 0, host: '127.0.0.1' });
    port = (wire.app.server.address() as AddressInfo).port;
  });
  after(async () => wire.close());

  /** Writes `raw` (then half-closes when `end`), and collects every byte the server writes until it closes, or 5 s. */
  function exchange(raw: string, end = false): Promise<string> {
    return new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      let received = '';
      const timer = setTimeout(() => socket.destroy(), 5_000);
      socket.on('error', () => undefined);
      socket.on('data', (d) => (received += d.toString('latin1')));
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(received);
      });
      socket.write(raw, () => (end ? socket.end() : undefined));
    });
  }
  const post = (key: string, body: string, headers = '', declared = Buffer.byteLength(body)) =>
    `POST /v1/events HTTP/1.1\r\nHost: tally\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n${headers}Connection: close\r\n\r\n${body}`;
  /** The answers in the order written, each [status, its problem's code or '']: bodies are read by Content-Length. */
  function answers(received: string): [number, string][] {
    const out: [number, string][] = [];
    let at = 0;
    while (received.startsWith('HTTP/1.1 ', at)) {
      const head = received.indexOf('\r\n\r\n', at);
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(received.slice(at, head))?.[1] ?? 0);
      const body = received.slice(head + 4, head + 4 + length);
      out.push([Number(received.slice(at + 9, at + 12)), body.startsWith('{') ? (JSON.parse(body).code ?? '') : '']);
      at = head + 4 + length;
    }
    return out;
  }

  it('BAD-INPUTS 1: a batch whose body breaks off on the wire (fewer bytes than Content-Length) is 400 invalid_batch; nothing stored', async () => {
    const tenant = await tenantWithProduct(wire.app);
    const body = JSON.stringify([event()]);
    assert.deepEqual(answers(await exchange(post(tenant.ingestKey, body, '', Buffer.byteLength(body) + 10), true)), [[400, 'invalid_batch']]);
    await assertNothingStored(tenant.id);
  });

  it('a whole batch followed on the connection by bytes that are no request: the batch’s 200 comes first, then the 400', async () => {
    const tenant = await tenantWithProduct(wire.app);
    const raw = post(tenant.ingestKey, JSON.stringify([event()])).replace('Connection: close\r\n', '') + 'GARBAGE\r\n\r\n';
    assert.deepEqual(answers(await exchange(raw)), [
      [200, ''],
      [400, 'invalid_request'],
    ]);
    assert.equal(await countStored(t.db, tenant.id), 1);
  });

  it('an expectation other than 100-continue is ignored: the batch is answered as without it', async () => {
    const tenant = await tenantWithProduct(wire.app);
    assert.deepEqual(answers(await exchange(post(tenant.ingestKey, JSON.stringify([event()]), 'Expect: fancy\r\n'))), [[200, '']]);
    assert.equal(await countStored(t.db, tenant.id), 1);
  });

  it('HTTP/1.1 without Host is answered as any request (401 problem+json), not by a bare 400', async () => {
    assert.deepEqual(answers(await exchange('GET /v1/invalid-events HTTP/1.1\r\nConnection: close\r\n\r\n')), [[401, 'unauthorized']]);
  });

  it('a large X-Environment-Data header never refuses the batch: up to 16 KB decoded it is kept, past that ignored', async () => {
    const tenant = await tenantWithProduct(wire.app);
    const env = (bytes: number) => Buffer.from(JSON.stringify({ os_name: 'Linux', pad: 'x'.repeat(bytes) })).toString('base64');
    for (const size of [14_000, 20_000]) {
      const res = answers(await exchange(post(tenant.ingestKey, JSON.stringify([event()]), `X-Environment-Data: ${env(size)}\r\n`)));
      assert.deepEqual(res, [[200, '']], `${size} bytes`);
    }
    assert.equal(await countStored(t.db, tenant.id), 2);
    const kept = await t.db.query<{ pad: number }>("SELECT length(data->>'pad') AS pad FROM environments WHERE tenant_id = $1", [tenant.id]);
    assert.deepEqual(
      kept.map((r) => Number(r.pad)),
      [14_000],
    );
  });

  it('a path parameter past 3,072 characters: 400 validation_error naming the path, without echoing it', async () => {
    const received = await exchange(`GET /v1/products/${'a'.repeat(3073)} HTTP/1.1\r\nHost: tally\r\nConnection: close\r\n\r\n`);
    assert.deepEqual(answers(received), [[400, 'validation_error']]);
    const problem = JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4));
    assert.deepEqual(
      problem.errors.map((e: { field: string }) => e.field),
      ['path'],
    );
    assert.ok(received.length < 1_000, `${received.length} bytes`);
  });
});
