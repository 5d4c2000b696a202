// The embedded store's write lane (src/storage/embedded/write-queue.mjs), on its own: small writes
// pass big ones and the job's steps, and the bound keeps a big one from starving. The same on the
// real worker: test/read-lane.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createWriteQueue, MAX_PASSED } from '../src/storage/embedded/write-queue.mjs';

type Msg = { op: string; params?: unknown[]; name: string };
const write = (name: string, chars: number): Msg => ({ op: 'write', params: ['tenant', 'x'.repeat(chars)], name });
const drain = (q: ReturnType<typeof createWriteQueue<Msg>>): string[] => {
  const order: string[] = [];
  for (let m = q.take(); m; m = q.take()) order.push(m.name);
  return order;
};

test('a small write passes big writes and a job step queued before it; equal ones keep their order', () => {
  const q = createWriteQueue<Msg>();
  q.push(write('big 1', 400_000));
  q.push({ op: 'script', name: 'job step' });
  q.push(write('big 2', 400_000));
  q.push(write('small 1', 40_000));
  q.push(write('small 2', 40_000));
  assert.deepEqual(drain(q), ['small 1', 'small 2', 'big 1', 'big 2', 'job step']);
});

test(`a waiting write is passed at most ${MAX_PASSED} times`, () => {
  const q = createWriteQueue<Msg>();
  q.push(write('big', 400_000));
  const order: string[] = [];
  // Small writes keep coming, two for every one taken: without the bound the big one never goes.
  for (let i = 0; i < 20; i++) {
    q.push(write(`small ${2 * i}`, 40_000));
    q.push(write(`small ${2 * i + 1}`, 40_000));
    order.push(q.take()!.name);
  }
  assert.equal(order.indexOf('big'), MAX_PASSED, order.join(', '));
  // And a job's step (bigger than any write) goes too, after as many small writes sent after it.
  drain(q);
  q.push({ op: 'script', name: 'job step' });
  const after: string[] = [];
  for (let i = 0; i < 10; i++) {
    q.push(write(`later ${i}`, 40_000));
    after.push(q.take()!.name);
  }
  assert.equal(after.indexOf('job step'), MAX_PASSED, after.join(', '));
});
