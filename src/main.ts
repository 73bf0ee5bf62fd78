// Process entry point: the only place (with cli.ts) that reads process.env.
import path from 'node:path';
import { ConfigError, loadConfig, type Config } from './config/config.js';
import { createLogger } from './logger.js';
import { startServer } from './server.js';

let config: Config;
try {
  config = loadConfig(process.env);
} catch (error) {
  // Before anything starts: one message naming every bad variable, no stack trace.
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}
const log = createLogger(config.log.level);

try {
  const server = await startServer(config, log);
  if (server.bootstrapKey) {
    // Shown once on the terminal, deliberately not through the logger (secrets never go to logs).
    process.stdout.write(
      `\nFirst start: created an API key for user "default" (also saved, owner-only, in ${server.bootstrapKey.file}):\n\n` +
        `  ${server.bootstrapKey.key}\n\nSend it as "Authorization: Bearer <key>" (or the X-Session-API-Key header). More keys: npm run cli -- keys create --user <id>\n\n`,
    );
  } else if (!config.auth.sessionApiKey) {
    process.stdout.write(
      `\nAPI keys: the first key is in ${path.join(config.dataDir, 'default-api-key')}; ` +
        `mint more with: npm run cli -- keys create --user <id>\n\n`,
    );
  }

  // Logged after the banner so "listening" marks a fully announced start.
  log.info({ url: server.url, dataDir: config.dataDir, database: config.mongo.uri ? 'external' : 'embedded' }, 'listening');
  log.flush(); // the line operators and scripts wait for goes out now, not with the next batch

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 30_000);
    force.unref();
    server.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
} catch (error) {
  log.fatal({ err: error }, 'start-up failed');
  process.exit(1);
}
