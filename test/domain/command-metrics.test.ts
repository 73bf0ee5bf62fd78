// DB_COMMAND_METRICS: the database's time by collection, command and the filter's field names
// (where the time goes under load: bench/scale.ts reports it per phase), never a value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDomain, type TestDomain } from '../helpers/domain.js';

const LLM_KEY = 'sk-command-metrics-7d1e';
const USER = 'metrics-user-5c2a';
const SAMPLE = /^database_command_duration_seconds_count\{collection="([^"]*)",command="([^"]*)",filter="([^"]*)"\} (\d+)$/;

let on: TestDomain;
let off: TestDomain;
beforeAll(async () => {
  [on, off] = await Promise.all([
    startTestDomain('command-metrics', { DB_COMMAND_METRICS: 'true' }),
    startTestDomain('no-command-metrics'),
  ]);
});
afterAll(() => Promise.all([on.stop(), off.stop()]));

/** The counted commands as [collection, command, filter fields, count]; and the whole text. */
const countsOf = async (domain: TestDomain) => {
  const text = await domain.deps.metrics.registry.metrics();
  const samples = text.split('\n').flatMap((line) => {
    const match = SAMPLE.exec(line);
    return match ? [[match[1], match[2], match[3], Number(match[4])] as const] : [];
  });
  return { text, samples };
};

describe('database command metrics', () => {
  it('count each command by collection, command and filter fields, naming no value', async () => {
    const user = on.as(USER);
    await user.settings.save({ llm_model: 'gpt-4o', llm_api_key: LLM_KEY });
    expect(await user.settings.get()).toMatchObject({ llm_model: 'gpt-4o' });
    const { text, samples } = await countsOf(on);
    const settingsReads = samples.find(
      ([collection, command, filter]) => collection === 'settings' && command === 'find' && filter === 'userId',
    );
    expect(settingsReads?.[3]).toBeGreaterThanOrEqual(1);
    expect(text).not.toContain(USER);
    expect(text).not.toContain(LLM_KEY);
  });

  it('are off unless asked for', async () => {
    await off.as(USER).settings.save({ llm_model: 'gpt-4o' });
    expect((await countsOf(off)).samples).toEqual([]);
  });
});
