// Operator CLI: API keys and encryption-key rotation. Works against MONGODB_URI or the
// embedded database (reusing the service's FerretDB when it runs, else starting one).
//
//   npm run cli -- keys create --user <id> [--label <text>]   (the key is the last line)
//   npm run cli -- keys list [--user <id>]
//   npm run cli -- keys revoke <key-id>
//   npm run cli -- encryption generate-key
//   npm run cli -- encryption rotate      (re-encrypt every secret under ENCRYPTION_KEY)
//   npm run cli -- webhooks add|list|remove|rotate-secret|test|deliveries   (endpoints hearing every user's events)
import { parseArgs } from 'node:util';
import { ensureDataDir, loadSecretBox, openDatabase } from './bootstrap.js';
import { loadConfig } from './config/config.js';
import { generateKeyText } from './crypto.js';
import { createLogger } from './logger.js';
import { AuditService } from './services/audit.service.js';
import { createCredentialServices } from './services/identity/credential-services.js';
import { reencryptServiceSecrets, rewrapper } from './services/rotation.service.js';
import { ConversationStore } from './conversations/records/store.js';
import { operatorWebhooks, WEBHOOK_USAGE } from './cli-webhooks.js';

const USAGE = `usage:
  cli keys create --user <id> [--label <text>]
  cli keys list [--user <id>]
  cli keys revoke <key-id>
  cli encryption generate-key
  cli encryption rotate
${WEBHOOK_USAGE}`;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      user: { type: 'string' },
      label: { type: 'string' },
      url: { type: 'string' },
      events: { type: 'string' },
      description: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [group, command, ...rest] = positionals;
  if (values.help || !group) {
    process.stdout.write(USAGE + '\n');
    return values.help ? 0 : 2;
  }
  if (group === 'encryption' && command === 'generate-key') {
    process.stdout.write(generateKeyText() + '\n');
    return 0;
  }

  const config = loadConfig(process.env);
  // Progress of the embedded database goes to stderr so stdout stays machine-readable.
  const log = createLogger(process.env.LOG_LEVEL ?? 'warn', process.stderr);
  ensureDataDir(config, log);
  const box = loadSecretBox(config, log);
  const opened = await openDatabase(config, log, { registerEmbedded: false });
  try {
    // With the sessions wired in: revoking a key here deletes its browser sessions too.
    const services = createCredentialServices(opened.db.models, config);
    // The operator's key changes are in the audit log as the operator's ("operator", via "cli").
    const audit = new AuditService(opened.db.models.AuditEvent, opened.db.models.UserRole, { ...config.audit, log, sweep: false });
    const audited = async (action: string, input: Record<string, string>) => {
      audit.record({ userId: 'operator', action, outcome: 'ok', input, via: 'cli' });
      await audit.drain();
    };
    if (group === 'keys' && command === 'create') {
      if (!values.user) return fail('keys create needs --user <id>');
      const { key, info } = await services.apiKeys.create(values.user, values.label ?? null);
      await audited('cli.keys.create', { user_id: info.userId, key_id: info.id });
      process.stdout.write(`created key ${info.id} for user ${info.userId}\n${key}\n`);
      return 0;
    }
    if (group === 'keys' && command === 'list') {
      const keys = await services.apiKeys.list(values.user);
      for (const k of keys) {
        const state = k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active';
        process.stdout.write(`${k.id}\t${k.userId}\t${k.createdAt.toISOString()}\t${state}\t${k.label ?? ''}\n`);
      }
      return 0;
    }
    if (group === 'keys' && command === 'revoke') {
      const keyId = rest[0];
      if (!keyId) return fail('keys revoke needs <key-id>');
      if (!(await services.apiKeys.revoke(keyId))) return fail(`no active key with id ${keyId}`);
      await audited('cli.keys.revoke', { key_id: keyId });
      process.stdout.write(`revoked ${keyId}\n`);
      return 0;
    }
    if (group === 'webhooks') {
      return await operatorWebhooks({ models: opened.db.models, box, config, log }, command, rest, values, fail);
    }
    if (group === 'encryption' && command === 'rotate') {
      const { rewrap, values } = rewrapper(box);
      const documents =
        (await reencryptServiceSecrets(opened.db.models, rewrap)) + (await new ConversationStore(opened.db, box).reencryptSecrets(rewrap));
      process.stdout.write(`re-encrypted ${values()} values in ${documents} documents under key ${box.currentKeyId}\n`);
      return 0;
    }
    return fail(`unknown command: ${positionals.join(' ')}\n${USAGE}`);
  } finally {
    await opened.close();
  }
}

function fail(message: string): number {
  process.stderr.write(message + '\n');
  return 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
