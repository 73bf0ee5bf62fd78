// npm run bench:list-searches: the first page of a user's conversations on the embedded FerretDB
// as history grows, answered from the lists (what the service does) and by the records' own
// query (what it did before, and what MongoDB's index serves), in the same run and process;
// no HTTP. The query is measured only while one takes under QUERY_CAP_MS.
//
//   npm run bench:list-searches [-- --sizes 1000,10000,100000 --pages 20]
import os from 'node:os';
import { parseArgs } from 'node:util';
import { IndexedSearches, searchesFor, type Searches } from '../src/conversations/records/searches.js';
import { rebuildLists } from '../src/db/record-lists/list-rebuild.js';
import { withOwnDatabase } from './own-database.js';
import { seedConversations } from './seed.js';

const { values } = parseArgs({
  options: { sizes: { type: 'string', default: '1000,10000,100000' }, pages: { type: 'string', default: '20' } },
});
const QUERY_CAP_MS = 5_000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const rows = ['| conversations | lists p50 (ms) | query p50 (ms) | lists built in (s) |', '| ---: | ---: | ---: | ---: |'];
  await withOwnDatabase('list-searches', { operationTimeoutMs: 120_000 }, async (db) => {
    const listed = searchesFor(db);
    const indexed = new IndexedSearches(db.models);
    let have = 0;
    let queryTooSlow = false;
    for (const size of values.sizes.split(',').map(Number)) {
      await seedConversations(db.connection.db!, 'history', have, size - have);
      have = size;
      const started = performance.now();
      await rebuildLists(db, ['conversations']);
      const built = (performance.now() - started) / 1000;
      const page = async (searches: Searches, times: number) => {
        const took: number[] = [];
        for (let i = 0; i < times; i++) {
          const at = performance.now();
          await searches.conversations('history', { topLevelOnly: true }, 0, 21, i % 2 ? 'UPDATED_AT_DESC' : 'CREATED_AT_DESC');
          took.push(performance.now() - at);
        }
        return median(took);
      };
      const lists = await page(listed, Number(values.pages));
      let query = '—';
      if (!queryTooSlow) {
        const ms = await page(indexed, 3);
        query = ms.toFixed(1);
        queryTooSlow = ms > QUERY_CAP_MS;
      }
      rows.push(`| ${size} | ${lists.toFixed(1)} | ${query} | ${built.toFixed(1)} |`);
      process.stderr.write(`${rows.at(-1)}\n`);
    }
    process.stdout.write(
      `${rows.join('\n')}\n\nOne process, sequential pages (newest by creation and by update, 21 records); load average ${os.loadavg()[0]!.toFixed(2)} at the end.\n`,
    );
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
