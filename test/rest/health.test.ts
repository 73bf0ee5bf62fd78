import { describe, expect, it } from 'vitest';
import { call, startTestApp } from '../helpers/app.js';

describe('/ready', () => {
  it('answers 503 once the database is unreachable, while /alive stays 200', async () => {
    const app = await startTestApp('health');
    try {
      expect((await call(app, 'GET', '/ready')).status).toBe(200);
      await app.server.deps.db.connection.close();
      expect(await call(app, 'GET', '/ready')).toMatchObject({ status: 503, body: { status: 'not ready', checks: { database: false } } });
      expect((await call(app, 'GET', '/alive')).status).toBe(200);
    } finally {
      await app.stop();
    }
  });
});
