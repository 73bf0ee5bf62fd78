// What the write gate (src/db/write-gate/write-gate.ts) costs a write on the embedded FerretDB: the same
// updates through a gated connection and through a bare driver client (FerretDB alone, which
// loses concurrent updates), one writer after the other and 16 at once (each on its own
// document, all in one collection), and split over two gated connections (two replicas). It
// counts the commands the gate adds (write_locks) per write.
// Usage: npm run bench:writes [-- --writes 2000]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { MongoClient, type Collection } from 'mongodb';
import { loadConfig } from '../src/config/config.js';
import { connectDatabase, type Database } from '../src/db/database.js';
import { ensureFerretDbBinary, startFerretDb } from '../src/db/ferretdb/embedded-mongo.js';
import { createLogger } from '../src/logger.js';
import { stopChild } from '../src/processes.js';

const { values } = parseArgs({ options: { writes: { type: 'string', default: '2000' } } });
const WRITES = Number(values.writes);
const log = createLogger('warn', process.stderr);

type Doc = { _id: string; n: number; at?: Date };

interface Row {
  what: string;
  gated: string;
  latencies: number[];
  seconds: number;
  lockCommands?: number;
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-bench-writes-'));
  const { cacheDir } = loadConfig(process.env);
  const ferret = await startFerretDb({
    binary: await ensureFerretDbBinary(cacheDir, log),
    dbDir: path.join(tmp, 'db'),
    stateDir: tmp,
    log,
  });
  const uri = `${ferret.uri.replace(/\/$/, '')}/bench_writes`;
  let lockCommands = 0;
  const countLocks = (event: { commandName: string; command: Record<string, unknown> }) => {
    if (event.command[event.commandName] === 'write_locks') lockCommands++;
  };
  const raw = new MongoClient(uri);
  const gated: Database[] = [
    await connectDatabase(uri, { operationTimeoutMs: 5_000, onCommand: countLocks }),
    await connectDatabase(uri, { operationTimeoutMs: 5_000, onCommand: countLocks }),
  ];
  const rows: Row[] = [];
  try {
    const bare = raw.db().collection<Doc>('bench');
    const through = gated.map((db) => db.connection.collection<Doc>('bench') as unknown as Collection<Doc>);
    await bare.insertMany(Array.from({ length: 16 }, (_, i) => ({ _id: `d${i}`, n: 0 })));
    const measure = async (what: string, label: string, collections: Collection<Doc>[], writers: number) => {
      await run(collections, writers, 200); // warm-up
      lockCommands = 0;
      const started = performance.now();
      const latencies = await run(collections, writers, WRITES);
      rows.push({ what, gated: label, latencies, seconds: (performance.now() - started) / 1000, lockCommands: lockCommands / WRITES });
    };
    await measure('one writer after the other', 'no (FerretDB alone)', [bare], 1);
    await measure('one writer after the other', 'yes', [through[0]!], 1);
    await measure('16 writers at once, own documents', 'no (FerretDB alone)', [bare], 16);
    await measure('16 writers at once, own documents', 'yes', [through[0]!], 16);
    await measure('16 writers at once, two replicas', 'yes, two gates', through, 16);
  } finally {
    await raw.close();
    for (const db of gated) await db.close();
    await stopChild(ferret.child);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  print(rows);
}

/** `total` updates by `writers` concurrent loops (writer i on document d<i>, on collection i mod n); returns each write's ms. */
async function run(collections: Collection<Doc>[], writers: number, total: number): Promise<number[]> {
  const latencies: number[] = [];
  let left = total;
  await Promise.all(
    Array.from({ length: writers }, async (_, i) => {
      const collection = collections[i % collections.length]!;
      while (left-- > 0) {
        const started = performance.now();
        await collection.updateOne({ _id: `d${i}` }, { $inc: { n: 1 }, $set: { at: new Date() } });
        latencies.push(performance.now() - started);
        // The next write comes in a later turn of the event loop, as a service's next request does.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }),
  );
  return latencies;
}

function print(rows: Row[]) {
  const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!.toFixed(2);
  console.log(`${WRITES} updates per row ($inc + $set of one document), FerretDB v1.24 on loopback\n`);
  console.log('| writers | gated | writes/s | p50 ms | p90 ms | p99 ms | write_locks commands per write |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const row of rows) {
    const sorted = [...row.latencies].sort((a, b) => a - b);
    const locks = row.gated.startsWith('no') ? '–' : row.lockCommands!.toFixed(2);
    const rate = Math.round(row.latencies.length / row.seconds);
    console.log(`| ${row.what} | ${row.gated} | ${rate} | ${pct(sorted, 0.5)} | ${pct(sorted, 0.9)} | ${pct(sorted, 0.99)} | ${locks} |`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
