// A bench's own embedded FerretDB in a temporary folder, connected as the service connects
// (write gate, record tables, deadlines), and removed with its folder when the work is done.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config/config.js';
import { connectDatabase, type Database, type DatabaseOptions } from '../src/db/database.js';
import { ensureFerretDbBinary, startFerretDb } from '../src/db/ferretdb/embedded-mongo.js';
import { createLogger } from '../src/logger.js';
import { stopChild } from '../src/processes.js';

export async function withOwnDatabase<T>(label: string, options: DatabaseOptions, work: (db: Database) => Promise<T>): Promise<T> {
  const log = createLogger('warn', process.stderr);
  const binary = await ensureFerretDbBinary(loadConfig(process.env).cacheDir, log);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `acp-bench-${label}-`));
  try {
    const ferret = await startFerretDb({ binary, dbDir: path.join(tmp, 'db'), stateDir: tmp, log });
    try {
      const db = await connectDatabase(`${ferret.uri}${label}`, options);
      try {
        return await work(db);
      } finally {
        await db.close();
      }
    } finally {
      await stopChild(ferret.child);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
