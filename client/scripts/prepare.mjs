/* global process, console */
// npm runs `prepare` on install of the workspace (npm install / npm ci at the root) and before
// npm pack / publish. It builds dist/, so that `import '@tally/client'` works on a fresh clone.
// An install without devDependencies (npm ci --omit=dev, as in a production image) has no
// esbuild or TypeScript to build with: that skips the build, with a note. Packing never does.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
let missing;
for (const tool of ['esbuild', 'typescript/bin/tsc']) {
  try {
    require.resolve(tool);
  } catch {
    missing = tool.split('/')[0];
    break;
  }
}
if (missing) {
  if (process.env.npm_command === 'pack' || process.env.npm_command === 'publish') {
    console.error(`@tally/client: cannot build dist/ for ${process.env.npm_command}: ${missing} is not installed`);
    process.exit(1);
  }
  console.warn(`@tally/client: ${missing} is not installed (devDependencies omitted?): dist/ is not built`);
} else {
  const { main } = await import('./build.mjs');
  await main();
}
