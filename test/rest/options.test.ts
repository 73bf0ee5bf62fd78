// /api/options/*: the web UI's start-up configuration and its settings pages' choices.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let plain: TestApp;
let configured: TestApp;
let plainKey: string;
let configuredKey: string;

beforeAll(async () => {
  [plain, configured] = await Promise.all([
    startTestApp('options'),
    startTestApp('options-configured', {
      POSTHOG_CLIENT_KEY: 'phc_operator',
      GITHUB_APP_CLIENT_ID: 'Iv1.abc',
      HIDE_LLM_SETTINGS: 'true',
      MAINTENANCE_START_TIME: '2026-01-02T03:00:00Z',
      LLM_MODELS: 'ollama/qwen2.5-coder, openai/gpt-4o ,litellm_proxy/team-model',
    }),
  ]);
  plainKey = await plain.keyFor('ui');
  configuredKey = await configured.keyFor('ui');
});
afterAll(async () => {
  await Promise.all([plain?.stop(), configured?.stop()]);
});

describe('GET /api/options/config', () => {
  it('answers the OSS body with every flag the UI dereferences, and no analytics key by default', async () => {
    const res = await call(plain, 'GET', '/api/options/config', { key: plainKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      APP_MODE: 'oss',
      GITHUB_CLIENT_ID: '',
      POSTHOG_CLIENT_KEY: '',
      FEATURE_FLAGS: { ENABLE_BILLING: false, HIDE_LLM_SETTINGS: false, ENABLE_JIRA: false, ENABLE_JIRA_DC: false, ENABLE_LINEAR: false },
    });
  });

  it('takes its values from configuration', async () => {
    const res = await call(configured, 'GET', '/api/options/config', { key: configuredKey });
    expect(res.body).toMatchObject({
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

describe('GET /api/options/models, agents, security-analyzers', () => {
  it('lists the maintained models, sorted and unique, with the UI default among them', async () => {
    const models: string[] = (await call(plain, 'GET', '/api/options/models', { key: plainKey })).body;
    expect(models).toEqual([...new Set(models)].sort());
    expect(models).toContain('openhands/claude-sonnet-4-20250514');
    expect(models.length).toBeGreaterThan(20);
    expect(models.every((m) => /^[a-z_]+\/\S+$/.test(m))).toBe(true);
  });

  it('adds LLM_MODELS, once each', async () => {
    const models: string[] = (await call(configured, 'GET', '/api/options/models', { key: configuredKey })).body;
    expect(models).toEqual(expect.arrayContaining(['ollama/qwen2.5-coder', 'litellm_proxy/team-model']));
    expect(models.filter((m) => m === 'openai/gpt-4o')).toHaveLength(1);
    expect(models).toEqual([...models].sort());
  });

  it('lists the agents and security analyzers', async () => {
    expect((await call(plain, 'GET', '/api/options/agents', { key: plainKey })).body).toEqual([
      'BrowsingAgent',
      'CodeActAgent',
      'DummyAgent',
      'LocAgent',
      'ReadOnlyAgent',
      'VisualBrowsingAgent',
    ]);
    expect((await call(plain, 'GET', '/api/options/security-analyzers', { key: plainKey })).body).toEqual(['grayswan', 'invariant', 'llm']);
  });

  it('is reachable over tRPC too', async () => {
    const res = await call(plain, 'GET', `/trpc/options.config?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`, {
      key: plainKey,
    });
    expect(res.body.result.data.json.APP_MODE).toBe('oss');
  });
});
