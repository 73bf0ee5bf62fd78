// The web UI's start-up configuration and its settings pages' choices (/api/options/*), through
// the procedures (createCaller, no HTTP): the OSS answer by default, the operator's values from
// configuration, and the model, agent and analyzer lists. Both transports answering alike is
// checked in test/trpc/client.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { startTestDomain, type TestDomain } from '../helpers/domain.js';

let plain: TestDomain;
let configured: TestDomain;

beforeAll(async () => {
  [plain, configured] = await Promise.all([
    startTestDomain('options'),
    startTestDomain('options-configured', {
      POSTHOG_CLIENT_KEY: 'phc_operator',
      GITHUB_APP_CLIENT_ID: 'Iv1.abc',
      HIDE_LLM_SETTINGS: 'true',
      MAINTENANCE_START_TIME: '2026-01-02T03:00:00Z',
      LLM_MODELS: 'ollama/qwen2.5-coder, openai/gpt-4o ,litellm_proxy/team-model',
    }),
  ]);
});
afterAll(async () => {
  await Promise.all([plain?.stop(), configured?.stop()]);
});

describe('the start-up configuration', () => {
  it('is the OSS one with every flag the UI dereferences, and no analytics key by default', async () => {
    expect(await plain.as('ui').options.config()).toEqual({
      APP_MODE: 'oss',
      GITHUB_CLIENT_ID: '',
      POSTHOG_CLIENT_KEY: '',
      FEATURE_FLAGS: { ENABLE_BILLING: false, HIDE_LLM_SETTINGS: false, ENABLE_JIRA: false, ENABLE_JIRA_DC: false, ENABLE_LINEAR: false },
    });
  });

  it('takes its values from configuration', async () => {
    expect(await configured.as('ui').options.config()).toMatchObject({
      APP_MODE: 'oss',
      GITHUB_CLIENT_ID: 'Iv1.abc',
      POSTHOG_CLIENT_KEY: 'phc_operator',
      FEATURE_FLAGS: { HIDE_LLM_SETTINGS: true, ENABLE_BILLING: false },
      MAINTENANCE: { startTime: '2026-01-02T03:00:00Z' },
    });
  });

  it('refuses an invalid maintenance time at start-up', () => {
    expect(() => loadConfig({ MAINTENANCE_START_TIME: 'next tuesday' })).toThrow(/MAINTENANCE_START_TIME/);
  });
});

describe('the choices', () => {
  it('list the maintained models, sorted and unique, with the UI default among them', async () => {
    const models = await plain.as('ui').options.models();
    expect(models).toEqual([...new Set(models)].sort());
    expect(models).toContain('openhands/claude-sonnet-4-20250514');
    expect(models.length).toBeGreaterThan(20);
    expect(models.every((m) => /^[a-z_]+\/\S+$/.test(m))).toBe(true);
  });

  it('add LLM_MODELS, once each', async () => {
    const models = await configured.as('ui').options.models();
    expect(models).toEqual(expect.arrayContaining(['ollama/qwen2.5-coder', 'litellm_proxy/team-model']));
    expect(models.filter((m) => m === 'openai/gpt-4o')).toHaveLength(1);
    expect(models).toEqual([...models].sort());
  });

  it('list the agents and security analyzers', async () => {
    expect(await plain.as('ui').options.agents()).toEqual([
      'BrowsingAgent',
      'CodeActAgent',
      'DummyAgent',
      'LocAgent',
      'ReadOnlyAgent',
      'VisualBrowsingAgent',
    ]);
    expect(await plain.as('ui').options.securityAnalyzers()).toEqual(['grayswan', 'invariant', 'llm']);
  });
});
