// The main bench's warm-pool start: start → READY with a warm sandbox to claim (bench/starts.ts),
// its p50 and what is left after the claim, and the parts of the start in a table of notes.
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/logger.js';
import { installAgentServer } from '../src/sandbox/process/agent-server-setup.js';
import { defaultSpecs } from '../src/sandbox/service/sandbox-specs.service.js';
import type { Results } from './report.js';
import { FAKE_SPEC, measureStarts, partsTable, stat, type StartRow } from './starts.js';

const agentName = (agent: string) =>
  agent === 'real'
    ? 'real agent server, dormant until its claim'
    : agent === 'real-booted'
      ? 'real agent server, booted with its keys'
      : 'fake agent server';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function warmPoolStarts(opts: {
  /** real: the built-in spec (warm sandboxes dormant until their claim, deferred_init); its booted twin beside it. */
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
  const measurements = opts.agents.flatMap((agent) => (agent === 'real' ? (['real', 'real-booted'] as const) : [agent]));
  for (const measurement of measurements) {
    const agent = measurement === 'fake' ? 'fake' : 'real';
    let specsFile: string | undefined;
    if (measurement === 'fake') {
      specsFile = path.join(opts.dir, 'specs.json');
      fs.writeFileSync(specsFile, JSON.stringify([FAKE_SPEC]));
    } else if (measurement === 'real-booted') {
      // The built-in spec as it was before deferred initialisation: warm sandboxes booted with their keys.
      specsFile = path.join(opts.dir, 'booted-specs.json');
      fs.writeFileSync(specsFile, JSON.stringify([{ ...defaultSpecs(loadConfig(process.env).sandbox)[0], deferred_init: false }]));
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
    process.stderr.write(`warm-pool starts, ${agentName(measurement)}, ${opts.runs} runs\n`);
    const measured = await measureStarts({
      agent,
      pool: 1,
      runs: opts.runs,
      mongoUri: opts.mongoUri,
      dir: path.join(opts.dir, measurement),
      readyOnly: true,
      ...(specsFile ? { specsFile } : {}),
    });
    rows.push(...measured.map((row) => ({ ...row, agent: measurement })));
    for (const row of measured) {
      const claim = row.parts?.['sandbox claim'] ?? [];
      const afterClaim = row.seconds.map((s, i) => s - (claim[i] ?? 0));
      const [p50, min, max] = stat(row.seconds).split(' | ');
      results.rows.push({
        what: `warm-pool start → READY, ${agentName(measurement)} (p50 of ${row.seconds.length})`,
        value: `${p50} s (${min}–${max}); after the claim ${median(afterClaim).toFixed(2)} s`,
      });
    }
  }
  if (rows.length)
    results.notes.push('', 'Warm-pool start → READY by part (p50 ms; parts met several times add up):', '', partsTable(rows, agentName));
}
