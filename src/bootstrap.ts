// Start-up pieces shared by the service (main.ts) and the CLI (cli.ts): the encryption key,
// the database (external or embedded) and the first API key.
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config/config.js';
import { generateKeyText, SecretBox } from './crypto.js';
import { connectDatabase, type DatabaseOptions, type Database } from './db/database.js';
import { startEmbeddedMongo, type EmbeddedMongo } from './db/ferretdb/embedded-mongo.js';
import type { Logger } from './logger.js';
import { DEFAULT_USER_ID } from './services/identity/api-keys.service.js';
import type { Services } from './domain.js';

export const ENCRYPTION_KEY_FILE = 'encryption.key';
export const DEFAULT_API_KEY_FILE = 'default-api-key';

/**
 * DATA_DIR holds the database files and keys: owner-only whoever created it. mkdir's mode
 * applies only to a folder it creates, so a folder the operator made (0755, say) is tightened
 * here, and so are key files left in it with wider modes. A folder of another owner (a mounted
 * volume) cannot be changed: that is said at start, and the key files stay 0600.
 */
export function ensureDataDir(config: Config, log: Logger): void {
  fs.mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  ownerOnly(config.dataDir, 0o700, log);
  for (const name of [ENCRYPTION_KEY_FILE, DEFAULT_API_KEY_FILE]) {
    const file = path.join(config.dataDir, name);
    if (fs.existsSync(file)) ownerOnly(file, 0o600, log);
  }
}

function ownerOnly(target: string, mode: number, log: Logger): void {
  if ((fs.statSync(target).mode & 0o777) === mode) return;
  try {
    fs.chmodSync(target, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') throw error;
    log.warn({ path: target, mode: mode.toString(8) }, 'could not make this owner-only (it belongs to another user)');
  }
}

/**
 * ENCRYPTION_KEY wins. Without it the embedded default keeps a generated key in DATA_DIR;
 * with an external MongoDB a key in one pod's filesystem would strand the data, so the
 * key must then be configured explicitly.
 */
export function loadSecretBox(config: Config, log: Logger): SecretBox {
  if (config.encryption.key) return SecretBox.fromStrings(config.encryption.key, config.encryption.previousKeys);
  if (config.mongo.uri) {
    throw new Error('ENCRYPTION_KEY is required when MONGODB_URI is set (generate one with: npm run cli -- encryption generate-key)');
  }
  const file = path.join(config.dataDir, ENCRYPTION_KEY_FILE);
  if (!fs.existsSync(file)) {
    writeOwnerOnly(file, generateKeyText() + '\n');
    log.info({ file }, 'generated a new encryption key for the embedded database');
  }
  return SecretBox.fromStrings(fs.readFileSync(file, 'utf8'), config.encryption.previousKeys);
}

export interface OpenedDatabase {
  db: Database;
  embedded: EmbeddedMongo | null;
  close(): Promise<void>;
}

export async function openDatabase(
  config: Config,
  log: Logger,
  opts: { registerEmbedded: boolean } & Pick<DatabaseOptions, 'onCommand' | 'onCommandDone'>,
): Promise<OpenedDatabase> {
  const embedded = config.mongo.uri
    ? null
    : await startEmbeddedMongo({
        dataDir: config.dataDir,
        cacheDir: config.cacheDir,
        log,
        register: opts.registerEmbedded,
      });
  try {
    const db = await connectDatabase(config.mongo.uri ?? embedded!.uri, {
      operationTimeoutMs: config.mongo.operationTimeoutMs,
      ...(opts.onCommand ? { onCommand: opts.onCommand } : {}),
      ...(opts.onCommandDone ? { onCommandDone: opts.onCommandDone } : {}),
    });
    return {
      db,
      embedded,
      close: async () => {
        await db.close();
        await embedded?.stop();
      },
    };
  } catch (error) {
    await embedded?.stop();
    throw error;
  }
}

/**
 * First start with no key configured or stored: mint one for the default user, write it
 * to an owner-only file and return it so the caller can show it once.
 */
export async function ensureBootstrapKey(config: Config, services: Services): Promise<{ key: string; file: string } | null> {
  if (config.auth.sessionApiKey || (await services.apiKeys.hasActiveKey())) return null;
  const { key } = await services.apiKeys.create(DEFAULT_USER_ID, 'bootstrap');
  const file = path.join(config.dataDir, DEFAULT_API_KEY_FILE);
  writeOwnerOnly(file, key + '\n');
  return { key, file };
}

function writeOwnerOnly(file: string, content: string): void {
  fs.writeFileSync(file, content, { mode: 0o600 });
  fs.chmodSync(file, 0o600); // the mode option is ignored when the file already exists
}
