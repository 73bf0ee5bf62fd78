// The only code that reads and writes StartTask and AppConversation records, through their
// record tables (src/db/record-lists/record-table.ts: by id, one record at a time, with the embedded
// FerretDB's lists kept alongside) and their searches (searches.ts). Records are typed from
// the models; the two fields the models keep loose (a task's status and its request) get
// their contract types here, once.
import { EventEmitter } from 'node:events';
import type { AppConversationRecord, Models, StartTaskRecord } from '../../../models/index.js';
import type { ConversationSortOrder, StartTaskFilters } from '../../../contract/app-conversations.schema.js';
import type { SecretBox } from '../../crypto.js';
import { isDuplicateKeyError } from '../../errors.js';
import { DecisionClaims } from '../../db/claims.js';
import type { ModelsAndTables, RecordTables } from '../../db/record-lists/record-tables.js';
import type { Where } from '../../db/record-lists/record-table.js';
import { searchesFor, type Searches } from './searches.js';
import type { LeaseStore } from '../../db/lease-queue.js';
import { startTaskLeases } from './task-leases.js';
import { TaskQueue } from './task-queue.js';
import {
  conversationFields,
  newConversation,
  newStartTask,
  reportedConversationDefaults,
  SEALED,
  sealContext,
  type Sealed,
  TERMINAL,
  type ConversationSearch,
  type ConversationUpdate,
  type TaskSortOrder,
  type NewStartTask,
  type StartTask,
} from './queries.js';

export type { ConversationSearch, ConversationUpdate, Sealed, TaskSortOrder } from './queries.js';
export { sealContext } from './queries.js';

export type { NewStartTask, StartTask } from './queries.js';
export type StartTaskUpdate = Partial<
  Pick<StartTask, 'status' | 'detail' | 'app_conversation_id' | 'sandbox_id' | 'agent_server_url' | 'sandbox_source'>
> & {
  leaseOwner?: null;
  leaseExpiresAt?: null;
};

export { TERMINAL } from './queries.js';

const asTask = (record: StartTaskRecord) => record as StartTask;

export class ConversationStore {
  private readonly taskChanges = new EventEmitter().setMaxListeners(0);
  private readonly queue: TaskQueue;
  private readonly models: Models;
  private readonly tables: RecordTables;
  private readonly searches: Searches;

  /** `db`: the opened database's models and record tables (database.ts). */
  constructor(
    db: ModelsAndTables,
    private readonly box: SecretBox,
    claims = new DecisionClaims(db.models),
  ) {
    this.models = db.models;
    this.tables = db.tables;
    this.queue = new TaskQueue(db.models.StartTaskQueue);
    this.searches = searchesFor(db);
    this.taskLeases = startTaskLeases(db.models, this.tables.tasks, this.queue, claims);
  }

  // ---- start tasks ----

  /**
   * Creates the task and, with it, its conversation's record (startState "starting"), so the
   * conversation is visible, and its id taken, from the first moment (a taken id: duplicate key).
   * What holds credentials is stored encrypted (SEALED): a per-conversation MCP override, the
   * request's secrets. No worker claims it for `holdMs` unless it is released (releaseTask).
   */
  async createTask(task: NewStartTask, sealed: Sealed, conversation: { tags: Record<string, string> }, holdMs = 0): Promise<StartTask> {
    const seal = (field: keyof Sealed) =>
      sealed[field] ? this.box.encrypt(JSON.stringify(sealed[field]), sealContext(task._id, field)) : null;
    const record = newStartTask(task, { mcpConfig: seal('mcpConfig'), requestSecrets: seal('requestSecrets') });
    // The queue entry first: a crash in between leaves an entry without a task (dropped), never a task no worker finds.
    await this.queue.enqueue(record._id, record.userId, record.createdAt, new Date(record.createdAt.getTime() + holdMs));
    await this.tables.tasks.insert(record);
    try {
      // No sandbox yet: the start sets it once it has the (checked) sandbox.
      const fields = { sandboxId: null, llm_model: task.request.llm_model ?? null, startState: 'starting', updatedAt: task.updatedAt };
      await this.tables.conversations.insert(newConversation(record, { ...fields, tags: conversation.tags }));
    } catch (error) {
      await this.tables.tasks.remove(task._id); // nothing half-written
      throw error;
    }
    return record;
  }

  /** A task held back at its creation may be claimed now. */
  async releaseTask(taskId: string): Promise<void> {
    await this.queue.dueAt(taskId, new Date());
  }

  /**
   * Key rotation: re-wraps the sealed fields of start tasks; returns the documents visited.
   * Each write applies only over the ciphertext it re-wrapped (the service may be running).
   */
  async reencryptSecrets(rewrap: <T>(value: T, context: string) => T | string): Promise<number> {
    let documents = 0;
    const query = { $or: SEALED.map((field) => ({ [field]: { $ne: null } })) };
    for await (const task of this.models.StartTask.find(query, { mcpConfig: 1, requestSecrets: 1 }).lean().cursor()) {
      for (const field of SEALED) {
        const value = rewrap(task[field], sealContext(task._id, field));
        // A sealed field is written once, at creation: a miss means the task is gone.
        if (value !== task[field]) await this.tables.tasks.update(task._id, { [field]: task[field] }, { $set: { [field]: value } });
      }
      documents++;
    }
    return documents;
  }

  /** A sealed field of a task, decrypted. */
  unseal<F extends keyof Sealed>(task: StartTask, field: F): Sealed[F] | null {
    const value = task[field];
    return value ? (JSON.parse(this.box.decrypt(value, sealContext(task._id, field))) as Sealed[F]) : null;
  }

  async task(userId: string, taskId: string): Promise<StartTask | null> {
    const record = await this.tables.tasks.get(taskId, { userId });
    return record ? asTask(record) : null;
  }

  async tasksByIds(userId: string, ids: string[]): Promise<StartTask[]> {
    return (await this.tables.tasks.getMany(ids, { userId })).map(asTask);
  }

  /** Up to limit + 1 tasks from offset in the given order. */
  async searchTasks(
    userId: string,
    filters: StartTaskFilters,
    sortOrder: TaskSortOrder,
    offset: number,
    limit: number,
  ): Promise<StartTask[]> {
    // One search: limit + 1 records tell whether another page exists (no count).
    return (await this.searches.tasks(userId, filters, sortOrder, offset, limit + 1)).map(asTask);
  }

  countTasks(userId: string, filters: StartTaskFilters): Promise<number> {
    return this.searches.countTasks(userId, filters);
  }

  /** The newest task that will create (or created) this conversation id. */
  async latestTaskOf(userId: string, conversationId: string): Promise<StartTask | null> {
    const [record] = await this.searches.tasksOf(userId, conversationId);
    return record ? asTask(record) : null;
  }

  async deleteTasksOf(userId: string, conversationId: string): Promise<number> {
    let deleted = 0;
    for (const task of await this.searches.tasksOf(userId, conversationId)) {
      if (await this.tables.tasks.remove(task._id, { userId })) deleted++;
    }
    return deleted;
  }

  // ---- start-task leases (task-leases.ts) ----

  readonly taskLeases: LeaseStore<StartTask>;

  /** Updates a task only while `owner` holds its lease: the task as updated, or null when the lease was lost. A status's first entry time is kept. */
  async updateLeasedTask(taskId: string, owner: string, update: StartTaskUpdate): Promise<StartTask | null> {
    const now = new Date();
    const record = await this.tables.tasks.update(
      taskId,
      { leaseOwner: owner },
      { $set: { updatedAt: now, ...update }, ...(update.status ? { $min: { [`phase_times.${update.status}`]: now } } : {}) },
    );
    if (!record) return null;
    // A finished task leaves the queue (a crash before this is settled by the next claim).
    if (update.status && TERMINAL.includes(update.status)) await this.queue.remove(taskId);
    this.taskChanges.emit('change', taskId, asTask(record));
    return asTask(record);
  }

  /** Calls listener with every task this process changes, as changed; returns the unsubscribe. */
  onTaskChange(listener: (taskId: string, task: StartTask) => void): () => void {
    this.taskChanges.on('change', listener);
    return () => this.taskChanges.off('change', listener);
  }

  // ---- app conversations ----

  async conversation(userId: string, id: string): Promise<AppConversationRecord | null> {
    return this.tables.conversations.get(id, { userId });
  }

  /** Whoever owns it (webhooks check the owner themselves). */
  async conversationById(id: string): Promise<AppConversationRecord | null> {
    return this.tables.conversations.get(id);
  }

  /**
   * A team organisation's conversations, whoever started them, or (personal) its user's started
   * outside any; newest first, limit + 1 read (the extra says more exist).
   */
  async inOrganization(
    org: { orgId: string; userId: string; personal: boolean },
    offset: number,
    limit: number,
  ): Promise<AppConversationRecord[]> {
    const [filter, sort] = org.personal
      ? [{ userId: org.userId, orgId: null }, { userId: 1, createdAt: -1, _id: -1 } as const]
      : [{ orgId: org.orgId }, { orgId: 1, createdAt: -1, _id: -1 } as const];
    return this.models.AppConversation.find(filter)
      .sort(sort)
      .skip(offset)
      .limit(limit + 1)
      .lean();
  }

  /** A member's conversations started in an organisation (all of them: what they hold there when they leave it). */
  async ofMemberInOrganization(orgId: string, userId: string): Promise<Pick<AppConversationRecord, '_id' | 'sandboxId'>[]> {
    return this.models.AppConversation.find({ orgId, userId }, { sandboxId: 1 }).sort({ orgId: 1, createdAt: -1, _id: -1 }).lean();
  }

  async conversationsByIds(userId: string, ids: string[]): Promise<AppConversationRecord[]> {
    return this.tables.conversations.getMany(ids, { userId });
  }

  /** The conversations of these ids their owners made public (any owner's: the shared view). */
  async publicConversations(ids: string[]): Promise<AppConversationRecord[]> {
    return ids.length === 0 ? [] : this.tables.conversations.getMany(ids, { public: true });
  }

  /** Up to limit + 1 conversations from offset, in the given order (newest first by default). */
  async searchConversations(
    userId: string,
    search: ConversationSearch,
    offset: number,
    limit: number,
    order: ConversationSortOrder = 'CREATED_AT_DESC',
  ): Promise<AppConversationRecord[]> {
    // One search: limit + 1 records tell whether another page exists (no count).
    return this.searches.conversations(userId, search, offset, limit + 1, order);
  }

  countConversations(userId: string, search: ConversationSearch): Promise<number> {
    return this.searches.countConversations(userId, search);
  }

  async subConversationsOf(userId: string, parentIds: string[]): Promise<{ _id: string; parent_conversation_id?: string | null }[]> {
    return this.searches.subConversationsOf(userId, parentIds);
  }

  async countConversationsInSandbox(userId: string, sandboxId: string): Promise<number> {
    return (await this.searches.inSandbox(userId, sandboxId)).length;
  }

  /** The user's newest conversation in the sandbox, or null. */
  async latestInSandbox(userId: string, sandboxId: string): Promise<string | null> {
    const found = await this.searches.inSandbox(userId, sandboxId);
    return found.sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())[0]?._id ?? null;
  }

  /** The sandbox a task's conversation runs in, once the task knows it. */
  async setConversationSandbox(task: StartTask, sandboxId: string): Promise<void> {
    await this.tables.conversations.update(task.conversationId, { userId: task.userId }, { $set: { sandboxId, updatedAt: new Date() } });
  }

  /**
   * Records the conversation a task started (idempotent: a retried start overwrites its own
   * record). False when the record is gone because its owner deleted the conversation meanwhile.
   */
  async saveStartedConversation(task: StartTask, sandboxId: string, model: string): Promise<boolean> {
    const set = { ...conversationFields(task), sandboxId, llm_model: model, startState: 'ready', updatedAt: new Date() };
    const update = async () =>
      (await this.tables.conversations.update(task.conversationId, { userId: task.userId }, { $set: set })) !== null;
    if (await update()) return true;
    // A task from before records were made at task creation has none yet; a deleted task's conversation stays deleted.
    if (!(await this.tables.tasks.get(task._id))) return false;
    try {
      await this.tables.conversations.insert(newConversation(task, set));
      return true;
    } catch (error) {
      // Its agent server reported the conversation first: the record exists now.
      if (isDuplicateKeyError(error)) return update();
      throw error;
    }
  }

  /** A start that ended in ERROR leaves its conversation failed (listed, deletable). */
  async markStartFailed(task: StartTask): Promise<void> {
    await this.setStartState(task, 'starting', 'failed');
  }

  /** A failure that did not end the task after all (another worker holds it): starting again. */
  async unmarkStartFailed(task: StartTask): Promise<void> {
    await this.setStartState(task, 'failed', 'starting');
  }

  private async setStartState(task: StartTask, from: string, to: string): Promise<void> {
    await this.tables.conversations.update(
      task.conversationId,
      { userId: task.userId, startState: from },
      { $set: { startState: to, updatedAt: new Date() } },
    );
  }

  /**
   * Fields the agent server in `owner.sandboxId` reports. A conversation id it reports first is
   * created for the sandbox's owner; an id that exists for another user or another sandbox (or
   * for a start that has no sandbox yet) is not touched, and the answer is false.
   */
  async saveReportedConversation(
    id: string,
    owner: { userId: string; sandboxId: string },
    set: Partial<Pick<AppConversationRecord, 'execution_status' | 'title' | 'metrics'>>,
    llmModel: string | null,
  ): Promise<boolean> {
    try {
      // The filter names owner and sandbox: a record of anyone else makes the upsert collide on _id.
      await this.tables.conversations.update(
        id,
        { userId: owner.userId, sandboxId: owner.sandboxId },
        {
          $set: { updatedAt: new Date(), ...set },
          $setOnInsert: reportedConversationDefaults(set, llmModel),
        },
        { upsert: true },
      );
      return true;
    } catch (error) {
      if (isDuplicateKeyError(error)) return false;
      throw error;
    }
  }

  /** Updates a user's conversation, if it also meets `unless` (a condition on its own fields); false when it did not. */
  async updateConversation(userId: string, id: string, set: ConversationUpdate, unless: Where = {}): Promise<boolean> {
    return (await this.tables.conversations.update(id, { userId, ...unless }, { $set: { ...set, updatedAt: new Date() } })) !== null;
  }

  /** Tells the conversations of a sandbox a lifecycle policy removed why their workspace is gone. */
  async markSandboxGone(sandboxId: string, reason: string): Promise<void> {
    for (const conversation of await this.searches.inSandbox(null, sandboxId)) {
      await this.tables.conversations.update(conversation._id, {}, { $set: { sandbox_gone_reason: reason } });
    }
  }

  async deleteConversation(userId: string, id: string): Promise<void> {
    await this.tables.conversations.remove(id, { userId });
  }
}
