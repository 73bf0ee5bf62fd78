// A start task's status record (src/conversations/start/task-steps.ts): progress statuses are written
// behind the work but in order, the next step waits for them and throws what they met, and an
// attempt's writes are all settled when it ends. The store here is a stand-in that lets each
// write land when the test says; the whole start runs on the real database in
// test/conversations/start-tasks.test.ts.
import { describe, expect, it } from 'vitest';
import { LeaseLost } from '../../src/db/lease-queue.js';
import { StartTimings } from '../../src/conversations/start/start-timings.js';
import type { ConversationStore, StartTask, StartTaskUpdate } from '../../src/conversations/records/store.js';
import { TaskSteps } from '../../src/conversations/start/task-steps.js';

type Write = { update: StartTaskUpdate; land(ok: boolean): void };

function harness() {
  const writes: Write[] = [];
  const announced: string[] = [];
  const ended: string[] = [];
  const task = { _id: 't1', status: 'WORKING', phase_times: {} } as unknown as StartTask;
  const store = {
    updateLeasedTask: (_id: string, _owner: string, update: StartTaskUpdate) =>
      new Promise<StartTask | null>((resolve) => {
        writes.push({ update, land: (ok) => resolve(ok ? ({ ...task, ...update } as StartTask) : null) });
      }),
  } as unknown as ConversationStore;
  const events = { taskChanged: async (changed: StartTask) => void announced.push(changed.status) };
  const timings = new StartTimings();
  const steps = new TaskSteps(task, 'me', { store, events }, timings, (_entered, outcome) => ended.push(outcome));
  return { steps, writes, announced, ended, timings };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('a start task’s steps', () => {
  it('writes progress behind the work, in order, and the next step waits for every write before it', async () => {
    const { steps, writes, announced, ended, timings } = harness();
    steps.progress('PREPARING_REPOSITORY');
    steps.progress('RUNNING_SETUP_SCRIPT');
    await tick();
    // The work goes on with the first write in flight; the second waits its turn.
    expect(writes.map((w) => w.update.status)).toEqual(['PREPARING_REPOSITORY']);
    let ready = false;
    const readyStep = steps.step('READY').then(() => (ready = true));
    writes[0]!.land(true);
    await tick();
    expect(writes.map((w) => w.update.status)).toEqual(['PREPARING_REPOSITORY', 'RUNNING_SETUP_SCRIPT']);
    expect(ready).toBe(false);
    writes[1]!.land(true);
    await tick();
    writes[2]!.land(true);
    await readyStep;
    expect(announced).toEqual(['PREPARING_REPOSITORY', 'RUNNING_SETUP_SCRIPT', 'READY']);
    expect(ended).toEqual(['READY']);
    expect(Object.keys(timings.toJSON())).toEqual(['status writes behind the work', 'status writes']);
  });

  it('a progress write that finds the lease taken fails the next step with LeaseLost, and nothing after it is written', async () => {
    const { steps, writes, announced, ended } = harness();
    steps.progress('SETTING_UP_GIT_HOOKS');
    steps.progress('STARTING_CONVERSATION', { agent_server_url: 'http://127.0.0.1:1' });
    await tick();
    writes[0]!.land(false); // another worker holds the task now
    await expect(steps.step('READY')).rejects.toBeInstanceOf(LeaseLost);
    expect(writes.map((w) => w.update.status)).toEqual(['SETTING_UP_GIT_HOOKS']);
    expect(announced).toEqual([]);
    expect(ended).toEqual([]);
  });

  it('settled() waits for the writes in flight, whatever they meet', async () => {
    const { steps, writes } = harness();
    steps.progress('PREPARING_REPOSITORY');
    let settled = false;
    const done = steps.settled().then(() => (settled = true));
    await tick();
    expect(settled).toBe(false);
    writes[0]!.land(false);
    await done;
    expect(settled).toBe(true);
  });
});
