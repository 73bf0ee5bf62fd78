// Bench data: API keys through the service's own key code, and history (finished start
// tasks with the conversations they started) inserted in bulk in the records' stored shape,
// because creating 100k conversations through the start workflow would take hours.
import crypto from 'node:crypto';
import type { Db } from 'mongodb';

const BATCH = 1000;
const hexId = () => crypto.randomBytes(16).toString('hex');

/**
 * `count` finished conversations for a user, newest last: each a READY start task and the app
 * conversation it created, one second apart in creation time.
 */
export async function seedHistory(db: Db, userId: string, count: number): Promise<void> {
  const base = Date.now() - count * 1000;
  for (let from = 0; from < count; from += BATCH) {
    const tasks = [];
    const conversations = [];
    for (let i = from; i < Math.min(count, from + BATCH); i++) {
      const createdAt = new Date(base + i * 1000);
      const conversationId = hexId();
      const sandboxId = `sb-${userId}-${i % 50}`;
      const request = {
        selected_repository: 'acme/widgets',
        selected_branch: 'main',
        git_provider: 'github',
        trigger: 'gui',
        pr_number: [],
      };
      tasks.push({
        _id: hexId(),
        userId,
        status: 'READY',
        detail: null,
        app_conversation_id: conversationId,
        sandbox_id: sandboxId,
        agent_server_url: 'http://127.0.0.1:9/',
        request,
        mcpConfig: null,
        conversationId,
        attempts: 1,
        leaseOwner: null,
        leaseExpiresAt: null,
        createdAt,
        updatedAt: createdAt,
      });
      conversations.push({
        _id: conversationId,
        userId,
        sandboxId,
        title: `Conversation ${i}`,
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
      });
    }
    await db.collection<{ _id: string }>('start_tasks').insertMany(tasks, { ordered: false });
    await db.collection<{ _id: string }>('app_conversations').insertMany(conversations, { ordered: false });
  }
}
