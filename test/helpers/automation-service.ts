// The real OpenHands automation service (PyPI openhands-automation, installed into the cache by
// scripts/setup-automation.sh) in its cloud mode against a test service: it asks that service who
// a caller is (users/me) and for users' keys (the service-key route). Its database is SQLite in a
// temporary folder (single process, as its own docs allow). docs/automation-service-notes.md.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../../src/processes.js';
import { eventually } from './eventually.js';

export interface AutomationService {
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/** The automation service's uvicorn, installed first if the cache lacks it. */
export async function automationUvicorn(): Promise<string> {
  const setup = await promisify(execFile)('bash', [path.join(PACKAGE_ROOT, 'scripts/setup-automation.sh')], {
    maxBuffer: 16 * 2 ** 20,
  }).catch((error: { code?: number; stderr?: string }) => {
    throw new Error(`the automation service could not be installed (exit ${error.code}): ${error.stderr?.trim().split('\n').pop()}`);
  });
  return setup.stdout.trim().split('\n').pop()!;
}

/** Starts it at `port` (taken first, for the service's AUTOMATION_URL), pointed at `appUrl` with `serviceKey`; resolves once it answers. */
export async function startAutomationService(
  appUrl: string,
  serviceKey: string,
  port: number,
  webhookSecret: string,
): Promise<AutomationService> {
  const uvicorn = await automationUvicorn();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-automation-'));
  const url = `http://127.0.0.1:${port}`;
  let output = '';
  const child: ChildProcess = spawn(uvicorn, ['openhands.automation.app:app', '--host', '127.0.0.1', '--port', String(port)], {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      HOME: dir,
      AUTOMATION_OPENHANDS_API_BASE_URL: appUrl,
      AUTOMATION_SERVICE_KEY: serviceKey,
      AUTOMATION_WEBHOOK_SECRET: webhookSecret,
      // Runs are made but not dispatched here (a run's sandbox side is not built yet).
      AUTOMATION_DISPATCHER_INTERVAL_SECONDS: '3600',
      AUTOMATION_BASE_URL: url,
      AUTOMATION_DB_URL: `sqlite+aiosqlite:///${path.join(dir, 'automations.db')}`,
      LOCAL_STORAGE_PATH: path.join(dir, 'storage'),
      LOG_JSON: '0',
      LITELLM_LOCAL_MODEL_COST_MAP: 'True',
      DO_NOT_TRACK: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      'the automation service to answer',
      async () => {
        if (child.exitCode !== null) throw new Error(`the automation service exited (${child.exitCode}):\n${output.slice(-4000)}`);
        return (await fetch(`${url}/health`).catch(() => null))?.ok === true;
      },
      120_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, output: () => output, stop };
}
