// Start latency with and without a warm pool (bench/starts.ts measures): start-to-RUNNING and
// start-to-READY on the process runtime with the real OpenHands agent server (when it can be
// installed) and with the test suite's fake agent server, and READY by status and by part.
// Usage: npm run bench:lifecycle [-- --runs 5 --agents real,fake --pools 0,1]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { StartTaskStatusSchema } from '../contract/app-conversations.schema.js';
import { loadConfig } from '../src/config/config.js';
import { ensureFerretDbBinary, startFerretDb } from '../src/db/ferretdb/embedded-mongo.js';
import { createLogger } from '../src/logger.js';
import { stopChild } from '../src/processes.js';
import { installAgentServer } from '../src/sandbox/process/agent-server-setup.js';
import { FAKE_SPEC, measureStarts, partsTable, stat, type StartRow } from './starts.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    agents: { type: 'string', default: 'real,fake' },
    pools: { type: 'string', default: '0,1' },
  },
});
const runs = Number(values.runs);
const log = createLogger('warn', process.stderr);

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-lifecycle-'));
  const { cacheDir } = loadConfig(process.env);
  const db = await startFerretDb({ binary: await ensureFerretDbBinary(cacheDir, log), dbDir: path.join(tmp, 'db'), stateDir: tmp, log });
  const rows: StartRow[] = [];
  const notes: string[] = [];
  try {
    for (const agent of values.agents.split(',') as ('real' | 'fake')[]) {
      let specsFile: string | undefined;
      if (agent === 'fake') {
        specsFile = path.join(tmp, 'specs.json');
        fs.writeFileSync(specsFile, JSON.stringify([FAKE_SPEC]));
      } else {
        const python = await installAgentServer({ cacheDir, agentServerVersion: loadConfig({}).sandbox.agentServerVersion, log }).catch(
          (error: unknown) => {
            notes.push(`real agent server not measured: ${(error as Error).message}`);
            return null;
          },
        );
        if (!python) continue;
      }
      for (const pool of values.pools.split(',').map(Number)) {
        rows.push(...(await measureStarts({ agent, pool, runs, mongoUri: db.uri, dir: path.join(tmp, `${agent}-${pool}`), specsFile })));
      }
    }
  } finally {
    await stopChild(db.child);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  print(rows, notes);
}

const agentName = (agent: string) => (agent === 'real' ? 'real agent server' : 'fake agent server');

function print(rows: StartRow[], notes: string[]): void {
  let out = `\n${runs} runs each, process runtime, FerretDB (SQLite) on loopback, Node ${process.version}, ${os.cpus().length} cores\n\n`;
  out += '| agent | warm pool | measure | p50 s | min s | max s |\n|---|---:|---|---:|---:|---:|\n';
  for (const r of rows) out += `| ${agentName(r.agent)} | ${r.pool} | ${r.measure} | ${stat(r.seconds)} |\n`;
  out +=
    '\nstart → READY by status (p50 s):\n\n| agent | warm pool | ' +
    PHASES.join(' | ') +
    ' |\n|---|---:|' +
    PHASES.map(() => '---:').join('|') +
    '|\n';
  for (const r of rows.filter((row) => row.phases)) {
    out += `| ${agentName(r.agent)} | ${r.pool} | ${PHASES.map((p) => (r.phases![p] ? stat(r.phases![p]).split(' | ')[0] : '–')).join(' | ')} |\n`;
  }
  out += '\nstart → READY by part (p50 ms; parts met several times add up):\n\n' + partsTable(rows, agentName);
  for (const note of notes) out += `\n${note}\n`;
  process.stdout.write(out);
}

/** The phases before READY, in order. */
const PHASES = StartTaskStatusSchema.options.filter((status) => status !== 'READY' && status !== 'ERROR');

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
