// One real FerretDB (MongoDB wire protocol, SQLite backend) for the whole run, built by the
// project's own script into the shared cache. Each test file uses its own database on it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { loadConfig } from '../../src/config/config.js';
import { ensureFerretDbBinary, startFerretDb } from '../../src/db/ferretdb/embedded-mongo.js';
import { stopChild } from '../../src/processes.js';
import { createLogger } from '../../src/logger.js';

declare module 'vitest' {
  export interface ProvidedContext {
    mongoUri: string;
  }
}

export default async function setup(project: TestProject) {
  const log = createLogger('warn', process.stderr);
  const { cacheDir } = loadConfig(process.env);
  const binary = await ensureFerretDbBinary(cacheDir, log);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-test-db-'));
  // The busiest process after the test workers; GOGC=400 took a sixth off its CPU (44 → 37 s over 40 files).
  const { uri, child } = await startFerretDb({ binary, dbDir: path.join(dir, 'db'), stateDir: dir, log, goGc: 400 });
  project.provide('mongoUri', uri);
  return async () => {
    await stopChild(child);
    fs.rmSync(dir, { recursive: true, force: true });
  };
}
