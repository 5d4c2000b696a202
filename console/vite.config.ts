import { defineConfig } from 'vite';

// Served by the Tally server at /console; hashed file names under assets/ are cached for a year.
export default defineConfig({
  base: '/console/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022', assetsInlineLimit: 0, chunkSizeWarningLimit: 300 },
});
