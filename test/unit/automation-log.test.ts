// What the embedded automation service's last words may show in the log: none of the secrets it
// was given (src/automations/embedded-service.ts).
import { describe, expect, it } from 'vitest';
import { withoutSecrets } from '../../src/automations/embedded-service.js';
import { createLogger } from '../../src/logger.js';

const options = {
  port: 8100,
  serviceKey: 'svc-key-0123456789abcdef',
  env: {
    AUTOMATION_DB_URL: 'postgresql+asyncpg://u:hunter2-secret@db/a',
    AUTOMATION_WEBHOOK_SECRET: 'whsec-abcdef123',
    AUTOMATION_SCHEDULER_INTERVAL_SECONDS: '5',
  },
  serviceUrl: 'http://127.0.0.1:3000',
  databasePort: 8101,
  dataDir: '/tmp',
  cacheDir: '/tmp',
  log: createLogger('silent'),
};

describe('the automation service exit line', () => {
  it('masks the service key and every secret-like variable it was given, and keeps the rest', () => {
    const line = `boom: key svc-key-0123456789abcdef, db postgresql+asyncpg://u:hunter2-secret@db/a, hook whsec-abcdef123, interval 5`;
    expect(withoutSecrets(line, options)).toBe('boom: key **********, db **********, hook **********, interval 5');
  });

  it("masks the embedded database's password (made here, so in none of the variables)", () => {
    const line = 'could not connect: postgresql+asyncpg://automation:Zx9-made-here-secret@127.0.0.1:8101/postgres';
    expect(withoutSecrets(line, options, ['Zx9-made-here-secret'])).toBe(
      'could not connect: postgresql+asyncpg://automation:**********@127.0.0.1:8101/postgres',
    );
  });
});
