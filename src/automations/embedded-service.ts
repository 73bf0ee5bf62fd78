// AUTOMATIONS=on: the OpenHands automation service runs beside this one on the same machine
// (docs/automation-service-notes.md). Installed into the cache on the first start
// (scripts/setup-automation.sh: about 800 MB and 4 minutes, in the background: until it answers,
// automation calls get 502), then started on 127.0.0.1:AUTOMATION_PORT in cloud mode against this
// service, and started again with backoff whenever it exits. Its database is SQLite in the data
// directory unless AUTOMATION_DB_URL names another (PostgreSQL for more than one replica: SQLite
// serves a single automation service). Each step and failure is one log line.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger.js';
import { PACKAGE_ROOT, stopChild } from '../processes.js';

const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 60_000;

export interface EmbeddedAutomationOptions {
  port: number;
  /** The automation service's own AUTOMATION_* variables from this service's environment. */
  env: Record<string, string>;
  serviceKey: string;
  /** This service as the automation service (and the sandboxes it starts) reach it. */
  serviceUrl: string;
  dataDir: string;
  cacheDir: string;
  log: Logger;
}

export interface EmbeddedAutomation {
  stop(): Promise<void>;
}

export function startEmbeddedAutomation(options: EmbeddedAutomationOptions): EmbeddedAutomation {
  const { log } = options;
  const home = path.join(options.dataDir, 'automations');
  let child: ChildProcess | null = null;
  let stopping = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;

  const run = async () => {
    if (stopping) return;
    const uvicorn = await install(options);
    if (stopping) return;
    if (!uvicorn) return retry();
    fs.mkdirSync(path.join(home, 'storage'), { recursive: true, mode: 0o700 });
    const started = Date.now();
    const url = `http://127.0.0.1:${options.port}`;
    child = spawn(uvicorn, ['openhands.automation.app:app', '--host', '127.0.0.1', '--port', String(options.port)], {
      cwd: home,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        AUTOMATION_DB_URL: `sqlite+aiosqlite:///${path.join(home, 'automations.db')}`,
        LOG_JSON: '1',
        ...options.env,
        AUTOMATION_OPENHANDS_API_BASE_URL: options.serviceUrl,
        AUTOMATION_SERVICE_KEY: options.serviceKey,
        AUTOMATION_BASE_URL: options.env.AUTOMATION_BASE_URL ?? url,
        AUTOMATION_RUN_MIGRATIONS_ON_STARTUP: 'true',
        LOCAL_STORAGE_PATH: path.join(home, 'storage'),
        LITELLM_LOCAL_MODEL_COST_MAP: 'True',
        DO_NOT_TRACK: '1',
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let lastLine = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      const lines = chunk.toString().trim().split('\n');
      lastLine = lines[lines.length - 1] ?? lastLine;
    });
    const mine = child;
    child.once('spawn', () => {
      log.info({ url, pid: mine.pid }, 'automation service starting');
      void announceReady(url, () => child === mine && !stopping, started, log);
    });
    child.once('error', (error) => log.error({ err: error }, 'the automation service could not be started'));
    child.once('exit', (code, signal) => {
      if (child !== mine) return;
      child = null;
      if (stopping) return;
      // A run of a minute or more counts as recovered: the next exit starts the backoff afresh.
      if (Date.now() - started > MAX_DELAY_MS) failures = 0;
      log.warn({ code, signal, last: withoutSecrets(lastLine, options).slice(0, 500) }, 'the automation service exited; starting it again');
      retry();
    });
  };

  const retry = () => {
    if (stopping) return;
    const delay = Math.min(FIRST_DELAY_MS * 2 ** failures, MAX_DELAY_MS);
    failures++;
    timer = setTimeout(() => void run(), delay);
  };

  void run();
  return {
    async stop() {
      stopping = true;
      clearTimeout(timer);
      if (child) await stopChild(child, 10_000);
    },
  };
}

/** Its last words with the secrets it was given masked (the service key, a database URL's password, …): they go to the log. */
export function withoutSecrets(line: string, options: EmbeddedAutomationOptions): string {
  const secrets = [
    options.serviceKey,
    ...Object.entries(options.env)
      .filter(([name]) => /KEY|SECRET|PASS|TOKEN|URL/.test(name))
      .map(([, v]) => v),
  ];
  return secrets.filter((secret) => secret.length >= 8).reduce((text, secret) => text.split(secret).join('**********'), line);
}

/** One line once the started service answers /ready (its database reached), or nothing if it ends first. */
async function announceReady(url: string, current: () => boolean, started: number, log: Logger): Promise<void> {
  while (current()) {
    const ready = await fetch(`${url}/ready`, { signal: AbortSignal.timeout(2_000) }).catch(() => null);
    if (ready?.ok) {
      log.info({ url, seconds: Math.round((Date.now() - started) / 100) / 10 }, 'automation service ready');
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

/** The installed service's uvicorn (installed first if the cache lacks it), or null when that failed (logged). */
function install(options: EmbeddedAutomationOptions): Promise<string | null> {
  return new Promise((resolve) => {
    const script = spawn('bash', [path.join(PACKAGE_ROOT, 'scripts', 'setup-automation.sh')], {
      env: { ...process.env, AGENT_CP_CACHE_DIR: options.cacheDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let announced = false;
    script.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
    script.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000);
      if (!announced && /install/i.test(stderr)) {
        announced = true;
        options.log.info('installing the automation service (PyPI openhands-automation) into the cache: a few minutes on the first start');
      }
    });
    script.once('error', (error) => (options.log.error({ err: error }, 'the automation service could not be installed'), resolve(null)));
    script.once('exit', (code) => {
      const uvicorn = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && fs.existsSync(uvicorn)) return resolve(uvicorn);
      options.log.error({ code, last: stderr.trim().split('\n').pop() }, 'the automation service could not be installed');
      resolve(null);
    });
  });
}
