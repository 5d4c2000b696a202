import { PGlite } from '@electric-sql/pglite';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const rss = () => Math.round(process.memoryUsage().rss / 1048576);
const dir = process.argv[2] || mkdtempSync(join(tmpdir(), 'memtest-'));
const opts = JSON.parse(process.argv[3] || '{}');
const pg = new PGlite({ dataDir: dir, ...opts });
await pg.waitReady;
const m = process.memoryUsage();
console.log(dir, 'ready rss', rss(), 'external', Math.round(m.external/1048576), 'ab', Math.round(m.arrayBuffers/1048576), 'heapUsed', Math.round(m.heapUsed/1048576));
const keys = Object.getOwnPropertyNames(pg).filter(k => pg[k] && typeof pg[k] === 'object');
for (const k of keys) { const v = pg[k]; if (v.HEAP8) console.log('module at', k, 'HEAP MB', Math.round(v.HEAP8.length/1048576)); }
await pg.close();
if (global.gc) global.gc();
console.log('closed rss', rss());
