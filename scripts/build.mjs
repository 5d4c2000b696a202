/* global console */
// Builds the server to dist/: every module of src/ transpiled on its own (no bundling, so the
// layout and the relative paths stay those of src/), plus the files that are not TypeScript and
// are found at run time beside the code that reads them: the embedded store's worker
// (storage/embedded/worker.mjs and init.mjs) and the migrations (storage/migrations/*.sql).
// Type checking is `npm run typecheck`; this only emits, in well under a second, so that
// `npm install` (the `prepare` script) leaves a runnable `npm start`.
import { cpSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const out = join(root, 'dist');

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

const all = files(src);
const code = all.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
const copied = all.filter((f) => f.endsWith('.mjs') || f.endsWith('.sql'));

rmSync(out, { recursive: true, force: true });
await esbuild.build({
  entryPoints: code,
  outdir: out,
  outbase: src,
  bundle: false,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
});
for (const f of copied) cpSync(f, join(out, relative(src, f)));
console.log(`built dist/: ${code.length} modules, ${copied.length} files copied`);
