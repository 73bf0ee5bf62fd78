// The use recorder's throttle (at most one write per sandbox per interval, the interval a
// quarter of the idle time up to a minute), its holds, and the retention reason's wording.
import { describe, expect, it, vi } from 'vitest';
import type { Models } from '../../models/index.js';
import { describeDuration } from '../../src/sandbox/lifecycle/retention.js';
import { SandboxUsage } from '../../src/sandbox/lifecycle/usage.js';

function recorder() {
  const writes: { filter: unknown; update: unknown }[] = [];
  const models = {
    Sandbox: {
      updateOne: async (filter: unknown, update: unknown) => {
        writes.push({ filter, update });
        return { matchedCount: 1 };
      },
    },
  } as unknown as Models;
  return { models, writes };
}

describe('SandboxUsage', () => {
  it('writes a use at most once per sandbox per interval', async () => {
    const { models, writes } = recorder();
    let now = 1_000_000;
    const usage = new SandboxUsage(models, 1_800_000, () => now);
    expect(usage.touchIntervalMs).toBe(60_000);
    await usage.touch('a');
    await usage.touch('a');
    await usage.touch('b');
    now += 59_999;
    await usage.touch('a');
    expect(writes.map((w) => w.filter)).toEqual([{ _id: 'a' }, { _id: 'b' }]);
    now += 1;
    await usage.touch('a');
    expect(writes).toHaveLength(3);
    expect(writes[2]!.update).toEqual({ $max: { lastUsedAt: new Date(now) } });
  });

  it('uses a quarter of a short idle time as the interval', () => {
    expect(new SandboxUsage(recorder().models, 2_000).touchIntervalMs).toBe(500);
  });

  it('keeps a held sandbox in use until released', async () => {
    // A moved clock: real timers fire late on a loaded machine, and the count would depend on it.
    vi.useFakeTimers();
    try {
      const { models, writes } = recorder();
      const usage = new SandboxUsage(models, 200); // touches every 50 ms
      const release = usage.hold('held');
      await vi.advanceTimersByTimeAsync(180);
      release();
      const whileHeld = writes.length;
      expect(whileHeld).toBeGreaterThanOrEqual(3);
      await vi.advanceTimersByTimeAsync(150);
      expect(writes.length).toBe(whileHeld);
    } finally {
      vi.useRealTimers();
    }
  });

  it('marks a conversation running, and unmarks it on any other status', async () => {
    const { models, writes } = recorder();
    const usage = new SandboxUsage(models, 60_000, () => 5_000);
    await usage.noteExecutionStatus('s', 'c', 'running');
    await usage.noteExecutionStatus('s', 'c', 'finished');
    expect(writes.map((w) => w.update)).toEqual([
      { $addToSet: { runningConversations: 'c' }, $max: { lastUsedAt: new Date(5_000) } },
      { $pull: { runningConversations: 'c' } },
    ]);
  });
});

describe('describeDuration', () => {
  it.each([
    [30 * 24 * 3600_000, '30 days'],
    [24 * 3600_000, '1 day'],
    [2 * 3600_000, '2 hours'],
    [5 * 60_000, '5 minutes'],
    [90_000, '90 s'],
    [1_000, '1 s'],
  ])('%d ms reads "%s"', (ms, text) => {
    expect(describeDuration(ms)).toBe(text);
  });
});
