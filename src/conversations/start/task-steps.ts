// A start task's record as its worker goes (src/conversations/start/start-workflow.ts): each status
// entered is written under the worker's lease and announced (start_task.status_changed). Steps
// whose record a later attempt needs (the sandbox) and the end wait for the write; the progress
// statuses between are written in order behind the work, which saves a database round trip per
// status on the way to READY (bench: "status writes" against "status writes behind the work").
import type { SandboxSource, StartTaskStatus } from '../../../contract/app-conversations.schema.js';
import type { ConversationLifecycleEvents } from '../conversation-lifecycle-events.js';
import { LeaseLost } from '../../db/lease-queue.js';
import type { StartTimings } from './start-timings.js';
import type { ConversationStore, StartTask, StartTaskUpdate } from '../records/store.js';

type Extra = Omit<StartTaskUpdate, 'status'>;
/** Called once the task reached READY or ERROR. */
export type TaskEnded = (entered: ReadonlyMap<string, number>, outcome: 'READY' | 'ERROR', source: SandboxSource | null) => void;

export class TaskSteps {
  /** When each status was first entered (this attempt's and earlier ones'), for the phase metrics. */
  private readonly entered: Map<string, number>;
  private source: SandboxSource | null;
  private current: StartTaskStatus;
  private written: Promise<void> = Promise.resolve();

  constructor(
    private readonly task: StartTask,
    private readonly owner: string,
    private readonly deps: { store: ConversationStore; events: Pick<ConversationLifecycleEvents, 'taskChanged'> },
    private readonly timings: StartTimings,
    private readonly ended: TaskEnded,
  ) {
    this.entered = new Map(Object.entries(task.phase_times ?? {}).map(([k, v]) => [k, new Date(v as Date).getTime()]));
    this.source = task.sandbox_source ?? null;
    this.current = task.status;
  }

  /** Records a status and waits for it (and every write before it); throws LeaseLost when another worker has taken the task over. */
  step(status: StartTaskStatus, extra: Extra = {}): Promise<void> {
    return (this.written = this.written.then(() => this.write(status, extra, 'status writes')));
  }

  /** Records a progress status without waiting: the next step waits for it and throws what it met (LeaseLost, an outage). */
  progress(status: StartTaskStatus, extra: Extra = {}): void {
    if (!this.entered.has(status)) this.entered.set(status, Date.now()); // the phase starts now, not when its write lands
    this.written = this.written.then(() => this.write(status, extra, 'status writes behind the work'));
    this.written.catch(() => {}); // met by the next step
  }

  /** Waits until no write of this attempt is in flight, whatever they met. */
  async settled(): Promise<void> {
    await this.written.catch(() => {});
  }

  private async write(status: StartTaskStatus, extra: Extra, part: string): Promise<void> {
    const updated = await this.timings.time(part, this.deps.store.updateLeasedTask(this.task._id, this.owner, { status, ...extra }));
    if (!updated) throw new LeaseLost();
    // Each status entered is an event (a step that only adds facts to the status is none).
    if (status !== this.current) await this.deps.events.taskChanged(updated);
    this.current = status;
    if (!this.entered.has(status)) this.entered.set(status, Date.now());
    if (extra.sandbox_source) this.source = extra.sandbox_source;
    if (status === 'READY' || status === 'ERROR') this.ended(this.entered, status, this.source);
  }
}
