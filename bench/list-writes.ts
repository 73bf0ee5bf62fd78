// npm run bench:lists: what the embedded layout's lists (src/db/record-lists/record-lists.ts) add to a write,
// in database commands (the driver's command monitoring) and milliseconds, against the same
// write without lists (the record table MongoDB uses, here on FerretDB), on one process and
// its own FerretDB in a temporary folder that is removed.
import crypto from 'node:crypto';
import os from 'node:os';
import { IndexedTable } from '../src/db/record-lists/record-table.js';
import type { ConversationRow } from '../src/db/record-lists/record-tables.js';
import { withOwnDatabase } from './own-database.js';

const WRITES = 200;

async function main() {
  await withOwnDatabase('lists', { operationTimeoutMs: 30_000, onCommand: () => {} }, async (db) => {
    const starts = new Map<number, number>();
    let commands = 0;
    db.connection.getClient().on('commandStarted', (e) => starts.set(e.requestId, performance.now()));
    db.connection.getClient().on('commandSucceeded', (e) => {
      if (starts.delete(e.requestId)) commands++;
    });
    const listed = db.tables.conversations;
    const plain = new IndexedTable<ConversationRow>(db.models.AppConversation);
    const record = (userId: string) => ({
      _id: crypto.randomBytes(16).toString('hex'),
      userId,
      title: 'Conversation',
      sandboxId: 'sb-1',
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    const rows: string[] = ['| write | ms per write | commands per write |', '| --- | ---: | ---: |'];
    const run = async (what: string, write: (i: number) => Promise<unknown>) => {
      commands = 0;
      const started = performance.now();
      for (let i = 0; i < WRITES; i++) await write(i);
      rows.push(`| ${what} | ${((performance.now() - started) / WRITES).toFixed(2)} | ${(commands / WRITES).toFixed(1)} |`);
    };
    // The user's lists past one bucket first.
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) ids.push((await listed.insert(record('u')))._id);
    const now = () => ({ updatedAt: new Date() });
    await run('insert, without lists', () => plain.insert(record('v')));
    await run('insert, with lists', () => listed.insert(record('u')));
    await run('updated_at moved, without lists', (i) => plain.update(ids[i]!, { userId: 'u' }, { $set: now() }));
    await run('updated_at moved, with lists', (i) => listed.update(ids[i]!, { userId: 'u' }, { $set: now() }));
    await run('rename (title, updated_at), with lists', (i) =>
      listed.update(ids[i]!, { userId: 'u' }, { $set: { title: `T${i}`, ...now() } }),
    );
    await run('no listed field, by id, with lists', (i) => listed.update(ids[i]!, {}, { $set: { execution_status: 'running' } }));
    await run('no listed field, owner checked, with lists', (i) =>
      listed.update(ids[i]!, { userId: 'u' }, { $set: { execution_status: 'idle' } }),
    );
    process.stdout.write(
      `${rows.join('\n')}\n\n${WRITES} writes each, one after the other; load average ${os.loadavg()[0]!.toFixed(2)}.\n`,
    );
  });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
