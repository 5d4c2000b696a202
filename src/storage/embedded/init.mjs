// @ts-check
/* global process */
// A new embedded store's initdb and migrations, in a process of its own: index.ts runs it before
// the store's worker thread opens the folder. initdb and the migrations' DDL grow PGlite's
// WebAssembly memory by some 500 MB that no later statement reuses and that WebAssembly never
// gives back; a process that ends with them returns all of it (docs/benchmarks.md, "Embedded
// store memory"). The migrations run as migrate.ts runs them (same table, same files); a store
// that already exists is migrated by the server itself.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import Postgrator from 'postgrator';

const [dataDir, sharedBuffersMb] = process.argv.slice(2);
if (!dataDir) throw new Error('usage: node init.mjs DATA_DIR [SHARED_BUFFERS_MB]');
const pg = new PGlite({ dataDir, postgresqlconf: [`shared_buffers = ${Number(sharedBuffersMb) || 16}MB`] });
await pg.waitReady;
const postgrator = new Postgrator({
  migrationPattern: join(dirname(fileURLToPath(import.meta.url)), '..', 'migrations', '*.sql'),
  driver: 'pg',
  schemaTable: 'schema_migrations',
  execQuery: async (/** @type {string} */ sql) => ({ rows: (await pg.query(sql)).rows }),
  execSqlScript: async (/** @type {string} */ sql) => {
    await pg.exec(sql);
  },
});
await postgrator.migrate();
await pg.close();
