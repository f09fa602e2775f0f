import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/**
 * The dashboard's build: a static site under `/app/` (served by the local stack and, in AWS, by
 * CloudFront from a private bucket; infra/constructs/dashboard.ts). Preact's automatic JSX runtime;
 * every page but the overview is its own chunk, loaded when first visited.
 */
export const WEB_ROOT = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: WEB_ROOT,
  base: '/app/',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    // No inline assets: the Content-Security-Policy allows scripts, styles and fonts from 'self' only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
});
