// The main bench's warm-pool start: start → READY with a warm sandbox to claim (bench/starts.ts),
// its p50 and what is left after the claim, and the parts of the start in a table of notes.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/logger.js';
import { installAgentServer } from '../src/sandbox/process/agent-server-setup.js';
import type { Results } from './report.js';
import { FAKE_SPEC, measureStarts, partsTable, stat, type StartRow } from './starts.js';

const agentName = (agent: string) => (agent === 'real' ? 'real agent server' : 'fake agent server');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function warmPoolStarts(opts: {
  agents: ('real' | 'fake')[];
  runs: number;
  /** FerretDB's URI (ending in "/"). */
  mongoUri: string;
  dir: string;
  results: Results;
}): Promise<void> {
  const { results } = opts;
  const rows: StartRow[] = [];
  fs.mkdirSync(opts.dir, { recursive: true });
  for (const agent of opts.agents) {
    let specsFile: string | undefined;
    if (agent === 'fake') {
      specsFile = path.join(opts.dir, 'specs.json');
      fs.writeFileSync(specsFile, JSON.stringify([FAKE_SPEC]));
    } else {
      const { cacheDir, sandbox } = loadConfig(process.env);
      const log = createLogger('warn', process.stderr);
      const installed = await installAgentServer({ cacheDir, agentServerVersion: sandbox.agentServerVersion, log }).catch(
        (error: unknown) => {
          results.notes.push(`Warm-pool start with the real agent server not measured: ${(error as Error).message}`);
          return null;
        },
      );
      if (!installed) continue;
    }
    process.stderr.write(`warm-pool starts, ${agentName(agent)}, ${opts.runs} runs\n`);
    const measured = await measureStarts({
      agent,
      pool: 1,
      runs: opts.runs,
      mongoUri: opts.mongoUri,
      dir: path.join(opts.dir, agent),
      readyOnly: true,
      ...(specsFile ? { specsFile } : {}),
    });
    rows.push(...measured);
    for (const row of measured) {
      const claim = row.parts?.['sandbox claim'] ?? [];
      const afterClaim = row.seconds.map((s, i) => s - (claim[i] ?? 0));
      const [p50, min, max] = stat(row.seconds).split(' | ');
      results.rows.push({
        what: `warm-pool start → READY, ${agentName(agent)} (p50 of ${row.seconds.length})`,
        value: `${p50} s (${min}–${max}); after the claim ${median(afterClaim).toFixed(2)} s`,
      });
    }
  }
  if (rows.length)
    results.notes.push('', 'Warm-pool start → READY by part (p50 ms; parts met several times add up):', '', partsTable(rows, agentName));
}
