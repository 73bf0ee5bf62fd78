// Bench data: history inserted in bulk in the records' stored shape (creating 100k
// conversations through the start workflow would take hours): finished start tasks, and the
// conversations of one user.
import crypto from 'node:crypto';
import type { Db } from 'mongodb';

const BATCH = 1000;
const hexId = () => crypto.randomBytes(16).toString('hex');

async function inBatches(count: number, make: (i: number) => { _id: string }, insert: (docs: { _id: string }[]) => Promise<unknown>) {
  for (let from = 0; from < count; from += BATCH) {
    await insert(Array.from({ length: Math.min(BATCH, count - from) }, (_, k) => make(from + k)));
  }
}

/** `count` READY start tasks of a user, one second apart (the start-task history). */
export async function seedFinishedTasks(db: Db, userId: string, count: number): Promise<void> {
  const base = Date.now() - count * 1000;
  const tasks = db.collection<{ _id: string }>('start_tasks');
  await inBatches(
    count,
    (i) => {
      const createdAt = new Date(base + i * 1000);
      const conversationId = hexId();
      return {
        _id: hexId(),
        userId,
        status: 'READY',
        detail: null,
        app_conversation_id: conversationId,
        sandbox_id: `sb-${userId}-${i % 50}`,
        agent_server_url: 'http://127.0.0.1:9/',
        request: { selected_repository: 'acme/widgets', selected_branch: 'main', git_provider: 'github', trigger: 'gui', pr_number: [] },
        mcpConfig: null,
        conversationId,
        attempts: 1,
        leaseOwner: null,
        leaseExpiresAt: null,
        createdAt,
        updatedAt: createdAt,
      };
    },
    (docs) => tasks.insertMany(docs, { ordered: false }),
  );
}

/**
 * Conversations number `from` to `from + count - 1` of a user, newest last, one second apart,
 * in the sandbox `sandboxOf(n)` names (by default one of 50 that do not exist).
 */
export async function seedConversations(
  db: Db,
  userId: string,
  from: number,
  count: number,
  sandboxOf: (n: number) => string = (n) => `sb-${userId}-${n % 50}`,
): Promise<void> {
  const base = Date.now() - 10_000_000_000 + from * 1000;
  const conversations = db.collection<{ _id: string }>('app_conversations');
  await inBatches(
    count,
    (i) => {
      const createdAt = new Date(base + i * 1000);
      return {
        _id: hexId(),
        userId,
        sandboxId: sandboxOf(from + i),
        title: `Conversation ${from + i}`,
        selected_repository: 'acme/widgets',
        selected_branch: 'main',
        git_provider: 'github',
        trigger: 'gui',
        llm_model: 'openai/gpt-4o',
        pr_number: [],
        parent_conversation_id: null,
        metrics: null,
        execution_status: 'finished',
        createdAt,
        updatedAt: createdAt,
      };
    },
    (docs) => conversations.insertMany(docs, { ordered: false }),
  );
}
