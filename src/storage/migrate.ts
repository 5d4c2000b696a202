import Postgrator from 'postgrator';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { LOCKS, type Db } from './db.js';

const migrationsDir = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/** Applies the numbered SQL migrations, holding an advisory lock so that processes starting together take turns. */
export async function migrate(db: Db): Promise<void> {
  await db.withLock(LOCKS.migrations, async (q) => {
    const postgrator = new Postgrator({
      migrationPattern: join(migrationsDir, '*.sql'),
      driver: 'pg',
      schemaTable: 'schema_migrations',
      execQuery: async (sql: string) => ({ rows: await q.query(sql) }),
      execSqlScript: (sql: string) => q.exec(sql),
    });
    await postgrator.migrate();
  });
}
