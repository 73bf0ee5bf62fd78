import type { NextConfig } from 'next';

const config: NextConfig = {
  // NEXT_DIST_DIR lets the repository's tests keep their cached build apart from `next dev`.
  distDir: process.env.NEXT_DIST_DIR || '.next',
  // This folder is the app's root, not the repository around it (which has a lockfile too).
  turbopack: { root: __dirname },
  outputFileTracingRoot: __dirname,
};

export default config;
