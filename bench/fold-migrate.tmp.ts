import { openDb } from '../src/storage/db.js';
import { migrate } from '../src/storage/migrate.js';
const db = await openDb({ databaseUrl: process.argv[2]! });
await migrate(db);
await db.close();
