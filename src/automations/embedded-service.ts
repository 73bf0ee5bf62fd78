// AUTOMATIONS=on: the OpenHands automation service runs beside this one on the same machine
// (docs/automation-service-notes.md). Installed into the cache on the first start
// (scripts/setup-automation.sh: about 800 MB and 4 minutes, in the background: until it answers,
// automation calls get 502), then started on 127.0.0.1:AUTOMATION_PORT in cloud mode against this
// service, and started again with backoff whenever it exits. Its database is PostgreSQL run here
// (embedded-postgres.ts) unless AUTOMATION_DB_URL names another. Each step and failure is one log line.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger.js';
import { runSetupScript, supervise, type Supervised } from '../processes.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';

export interface EmbeddedAutomationOptions {
  port: number;
  /** The automation service's own AUTOMATION_* variables from this service's environment. */
  env: Record<string, string>;
  serviceKey: string;
  /** This service as the automation service (and the sandboxes it starts) reach it. */
  serviceUrl: string;
  dataDir: string;
  cacheDir: string;
  /** The embedded PostgreSQL's port (unused with AUTOMATION_DB_URL). */
  databasePort: number;
  log: Logger;
}

export type EmbeddedAutomation = Supervised;

export function startEmbeddedAutomation(options: EmbeddedAutomationOptions): EmbeddedAutomation {
  const { log } = options;
  const home = path.join(options.dataDir, 'automations');
  const url = `http://127.0.0.1:${options.port}`;
  const database = options.env.AUTOMATION_DB_URL
    ? null
    : startEmbeddedPostgres({ port: options.databasePort, dataDir: options.dataDir, cacheDir: options.cacheDir, log });
  let current: ChildProcess | null = null;
  /** The embedded database's password, masked like the secrets in options.env. */
  let databasePassword = '';
  const service = supervise({
    start: async () => {
      const uvicorn = await install(options);
      const databaseUrl = uvicorn && (options.env.AUTOMATION_DB_URL ?? (await database!.url()));
      if (!uvicorn || !databaseUrl) return null;
      databasePassword = decodeURIComponent(new URL(databaseUrl).password);
      fs.mkdirSync(path.join(home, 'storage'), { recursive: true, mode: 0o700 });
      const started = Date.now();
      const child = spawn(uvicorn, ['openhands.automation.app:app', '--host', '127.0.0.1', '--port', String(options.port)], {
        cwd: home,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          LOG_JSON: '1',
          ...options.env,
          AUTOMATION_DB_URL: databaseUrl,
          AUTOMATION_OPENHANDS_API_BASE_URL: options.serviceUrl,
          AUTOMATION_SERVICE_KEY: options.serviceKey,
          // Its callbacks, events and SDK version reach it through this service (automation-routes.ts), as providers and runs do.
          AUTOMATION_BASE_URL: options.env.AUTOMATION_BASE_URL ?? options.serviceUrl,
          AUTOMATION_RUN_MIGRATIONS_ON_STARTUP: 'true',
          LOCAL_STORAGE_PATH: path.join(home, 'storage'),
          LITELLM_LOCAL_MODEL_COST_MAP: 'True',
          DO_NOT_TRACK: '1',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      current = child;
      child.once('spawn', () => {
        log.info({ url, pid: child.pid }, 'automation service starting');
        void announceReady(url, () => current === child && child.exitCode === null, started, log);
      });
      return child;
    },
    exited: (code, signal, lastLine) =>
      log.warn(
        { code, signal, last: withoutSecrets(lastLine, options, [databasePassword]).slice(0, 500) },
        'the automation service exited; starting it again',
      ),
    graceMs: 10_000,
  });
  return {
    async stop() {
      await service.stop();
      await database?.stop();
    },
  };
}

/** Its last words with the secrets it was given masked (the service key, a database URL's password, …): they go to the log. */
export function withoutSecrets(line: string, options: EmbeddedAutomationOptions, others: string[] = []): string {
  const secrets = [
    options.serviceKey,
    ...others,
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
async function install(options: EmbeddedAutomationOptions): Promise<string | null> {
  const { provided, failure } = await runSetupScript(
    'setup-automation.sh',
    [],
    { ...process.env, AGENT_CP_CACHE_DIR: options.cacheDir },
    {
      work: /install/i,
      onWork: () =>
        options.log.info('installing the automation service (PyPI openhands-automation) into the cache: a few minutes on the first start'),
    },
  );
  if (provided && fs.existsSync(provided)) return provided;
  options.log.error({ last: failure }, 'the automation service could not be installed');
  return null;
}
