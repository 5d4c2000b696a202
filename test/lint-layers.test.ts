// The dependency rule is enforced by lint: ESLint's own API lints small sources as if they stood
// in each layer's folder, with the project's real configuration. Nothing is faked.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ESLint } from 'eslint';

const eslint = new ESLint();

async function restricted(filePath: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('the dependency rule (http → ingest, query, admin → domain, storage)', () => {
  it('bites: domain imports nothing of ours, storage and ingest never reach up', async () => {
    const cases: [string, string][] = [
      ['src/domain/x.ts', "import { AppError } from '../errors.js';\nexport const x = AppError;\n"],
      ['src/domain/x.ts', "import type { Db } from '../storage/db.js';\nexport type X = Db;\n"],
      ['src/storage/x.ts', "import { buildApp } from '../app.js';\nexport const x = buildApp;\n"],
      ['src/storage/x.ts', "import { principalOf } from '../http/plugins/auth.js';\nexport const x = principalOf;\n"],
      ['src/ingest/x.ts', "import { adminRoutes } from '../http/routes/admin.js';\nexport const x = adminRoutes;\n"],
      ['src/query/x.ts', "import { createEventIngest } from '../ingest/pipeline.js';\nexport const x = createEventIngest;\n"],
      ['src/admin/x.ts', "import { createEventIngest } from '../ingest/pipeline.js';\nexport const x = createEventIngest;\n"],
      ['src/jobs/x.ts', "import { registerCors } from '../http/plugins/cors.js';\nexport const x = registerCors;\n"],
    ];
    for (const [file, source] of cases) assert.equal((await restricted(file, source)).length, 1, `${file}: ${source.split('\n')[0]}`);
  });

  it('lets each layer import what is below it', async () => {
    const cases: [string, string][] = [
      ['src/domain/x.ts', "import { isUuid } from './text.js';\nexport const x = isUuid;\n"],
      ['src/storage/x.ts', "import { isUuid } from '../domain/text.js';\nexport const x = isUuid;\n"],
      ['src/ingest/x.ts', "import { writeEventBatch } from '../storage/event-batch.js';\nexport const x = writeEventBatch;\n"],
      ['src/http/x.ts', "import { createEventIngest } from '../ingest/pipeline.js';\nexport const x = createEventIngest;\n"],
    ];
    for (const [file, source] of cases) assert.deepEqual(await restricted(file, source), [], `${file}: ${source.split('\n')[0]}`);
  });
});
