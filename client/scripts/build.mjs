/* global process, console */
// Builds the package: per-module ESM in dist/ (so bundlers can tree-shake), type declarations,
// and the minified browser bundles whose gzipped size docs/client.md records.
//   node scripts/build.mjs            build everything
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function sources(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** The browser entry as one minified ESM file (or an IIFE exposing `Tally`). */
export async function buildBrowserBundle(outfile, format = 'esm') {
  await esbuild.build({
    entryPoints: [join(root, 'src/browser.ts')],
    outfile,
    bundle: true,
    minify: true,
    format,
    ...(format === 'iife' ? { globalName: 'Tally' } : {}),
    platform: 'browser',
    target: ['es2020', 'chrome90', 'firefox90', 'safari15'],
    legalComments: 'none',
  });
  const code = readFileSync(outfile);
  return { bytes: code.length, gzipped: gzipSync(code, { level: 9 }).length };
}

export async function main() {
  const dist = join(root, 'dist');
  rmSync(dist, { recursive: true, force: true });
  await esbuild.build({
    entryPoints: sources(join(root, 'src')),
    outdir: dist,
    outbase: join(root, 'src'),
    format: 'esm',
    platform: 'neutral',
    target: 'es2020',
  });
  execFileSync(process.execPath, [createRequire(import.meta.url).resolve('typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  const esm = await buildBrowserBundle(join(dist, 'tally.min.js'));
  const iife = await buildBrowserBundle(join(dist, 'tally.iife.min.js'), 'iife');
  console.log(`dist/tally.min.js       ${esm.bytes} bytes minified, ${esm.gzipped} bytes gzipped`);
  console.log(`dist/tally.iife.min.js  ${iife.bytes} bytes minified, ${iife.gzipped} bytes gzipped`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
