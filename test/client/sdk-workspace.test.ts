// Today's SDK, unchanged, against the service: PyPI openhands-workspace's
// OpenHandsCloudWorkspace (installed by scripts/setup-sdk-workspace.sh into the cache) creates
// a sandbox with a Bearer key, reads the user's LLM and MCP settings and secrets through the
// sandbox's own key, runs a command in the real agent server and deletes the sandbox
// (test/fixtures/sdk-workspace-drive.py). Checks what the SDK read, not only that it ran.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

const run = promisify(execFile);
const LLM_KEY = 'sk-sdk-llm-key-5d1e';
const MCP_KEY = 'mcp-sdk-key-77aa';
const SECRET = { name: 'SDK_TOKEN', value: 'sdk-secret-value-31c4' };

let app: TestApp;
let key: string;
let python: string;

beforeAll(async () => {
  const setup = await run('bash', [path.join(PACKAGE_ROOT, 'scripts/setup-sdk-workspace.sh')]).catch(
    (error: { code?: number; stderr?: string }) => {
      throw new Error(`the SDK workspace could not be installed (exit ${error.code}): ${error.stderr?.trim().split('\n').pop()}`);
    },
  );
  python = setup.stdout.trim().split('\n').pop()!;
  app = await startTestApp('sdk-workspace', { SANDBOX_STARTUP_TIMEOUT_MS: '180000' });
  key = await app.keyFor('sdk-user');
  const headers = { authorization: `Bearer ${key}` };
  expect(
    (
      await call(app, 'POST', '/api/settings', {
        headers,
        body: {
          llm_model: 'openai/sdk-model',
          llm_api_key: LLM_KEY,
          llm_base_url: 'https://llm.example/v1',
          mcp_config: { shttp_servers: [{ url: 'https://mcp.example/mcp', api_key: MCP_KEY }] },
        },
      })
    ).status,
  ).toBe(200);
  expect((await call(app, 'POST', '/api/v1/secrets', { headers, body: { ...SECRET, description: 'for the SDK' } })).status).toBe(201);
}, 5 * 60_000);
afterAll(() => app?.stop());

describe('the SDK cloud workspace (openhands-workspace 1.58.2)', () => {
  it(
    'creates a sandbox, reads the LLM, MCP and secrets through the sandbox key, runs a command, and deletes it',
    { timeout: 6 * 60_000 },
    async () => {
      const driven = await run(python, [path.join(PACKAGE_ROOT, 'test/fixtures/sdk-workspace-drive.py'), app.url, key, SECRET.name], {
        timeout: 5 * 60_000,
      });
      const seen = JSON.parse(driven.stdout.trim().split('\n').pop()!) as {
        sandbox_id: string;
        llm: { model: string; api_key: string | null; base_url: string | null };
        mcp: Record<string, { url?: string; headers?: Record<string, string> }>;
        secret_names: string[];
        secret_url: string | null;
        secret_value: string | null;
        command: { exit_code: number; stdout: string };
      };
      expect(seen.llm).toEqual({ model: 'openai/sdk-model', api_key: LLM_KEY, base_url: 'https://llm.example/v1' });
      expect(Object.values(seen.mcp)).toEqual([expect.objectContaining({ url: 'https://mcp.example/mcp' })]);
      expect(JSON.stringify(Object.values(seen.mcp)[0])).toContain(MCP_KEY);
      expect(seen.secret_names).toEqual([SECRET.name]);
      expect(seen.secret_url).toBe(`${app.url}/api/v1/sandboxes/${seen.sandbox_id}/settings/secrets/${SECRET.name}`);
      expect(seen.secret_value).toBe(SECRET.value);
      expect(seen.command.exit_code).toBe(0);
      const [hello, uid] = seen.command.stdout.trim().split('\n');
      expect(hello).toBe('hello-from-the-sdk');
      expect(Number(uid)).toBeGreaterThan(0); // the agent runs as the sandbox's own unprivileged user
      // cleanup() deleted the sandbox.
      expect(await app.rawCollection('sandboxes').countDocuments({ _id: seen.sandbox_id as never })).toBe(0);
    },
  );
});
