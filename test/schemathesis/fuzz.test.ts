// Property-based fuzzing of the whole REST surface: schemathesis (from the cache, installed by
// scripts/setup-schemathesis.sh) generates requests from the service's own OpenAPI document and
// sends them, authenticated, to the real service on the run's FerretDB. Every answer must be
// documented (status, body schema, content type) and none may be a server error.
//
// Routes that start sandboxes or conversations run against a configuration where that is cheap
// and safe: the default sandbox spec is a command that exits at once (sandboxes end in ERROR in
// milliseconds), git providers are a local fake with a short timeout, and the service removes
// every sandbox it made when the test stops it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';
import { runSchemathesis } from '../helpers/schemathesis.js';
import { writeSpecsFile } from '../helpers/specs.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-fuzz-'));
let app: TestApp;
let provider: FakeGitProvider;
let key: string;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  const specsFile = writeSpecsFile(tmp, [
    { id: 'exits-at-once', command: ['false'] },
    { id: 'exits-too', command: ['true'] },
  ]);
  app = await startTestApp('fuzz', {
    SANDBOX_SPECS_FILE: specsFile,
    SANDBOX_MAX_RUNNING_PER_USER: '3',
    SANDBOX_STARTUP_TIMEOUT_MS: '2000',
    START_TASK_POLL_MS: '200',
    GITHUB_API_URL: provider.url,
    GITLAB_API_URL: provider.url,
    BITBUCKET_API_URL: `${provider.url}/2.0`,
    // Fuzzed self-hosted provider hosts are refused (422) rather than probed on the internet.
    GIT_PROVIDER_HOSTS: new URL(provider.url).host,
    PROVIDER_TIMEOUT_MS: '1000',
    // The rate limits are tested on their own (test/reliability/limits.test.ts).
    RATE_LIMIT_PER_USER: 'off',
    RATE_LIMIT_PER_IP: 'off',
  });
  key = await app.keyFor('fuzzer');
});

afterAll(async () => {
  await app?.stop();
  await provider?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('schemathesis against the running service', () => {
  // About a minute on an idle 2-core machine; the bound only stops a hang, so it leaves room for a loaded one.
  it('finds no server error and nothing the document does not describe', { timeout: 330_000 }, async () => {
    const result = await runSchemathesis({
      name: 'service',
      schemaUrl: `${app.url}/api/openapi.json`,
      headers: { 'X-Session-API-Key': key },
      // Random cases per operation. The coverage phase's boundary cases (about 8,000, most of
      // the run) do not depend on it; at 8 the random phase took 26 s of the suite's CPU.
      maxExamples: 4,
      seed: 11,
      requestTimeoutSeconds: 15,
      timeoutMs: 300_000,
    });
    console.info(
      `schemathesis: ${result.operations.tested}/${result.operations.total} operations, ` +
        `${result.testCases.generated} cases, ${result.checksRun} checks, ${result.failures.length} failures`,
    );
    expect(result.failures, result.output.slice(-12_000)).toEqual([]);
    expect(result.exitCode).toBe(0);
    expect(result.operations.tested).toBe(result.operations.total);
    expect(result.operations.total).toBeGreaterThanOrEqual(33);
    expect(result.testCases.generated).toBeGreaterThan(500);
    expect(result.checksRun).toBeGreaterThan(result.testCases.generated);
  });

  it('left no sandbox process running', async () => {
    const sandboxes = await app.rawCollection('sandboxes').find({}).toArray();
    for (const sandbox of sandboxes) {
      const state = await app.server.deps.runtime.state(String(sandbox._id), sandbox.desired);
      expect(state.status, String(sandbox._id)).not.toBe('RUNNING');
    }
  });
});
