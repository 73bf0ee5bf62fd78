// The audit log through the procedures: state-changing calls of users are recorded with their
// outcome, the ids and names they named and the names of the fields they sent — never a key, a
// secret's value or a setting's value — and read back, newest first and paged, by administrators
// (ADMIN_USERS) only; entries past AUDIT_RETENTION_DAYS go. The REST search's and the JSON-lines
// export's statuses are in test/rest/account-routes.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';

const SECRET_VALUE = 'audit-secret-value-7f3e';
const LLM_KEY = 'sk-audit-llm-key-91ab';
let domain: TestDomain;
let clockOffsetMs = 0;
const admin = () => domain.as('auditor');
const dora = () => domain.as('dora');

beforeAll(async () => {
  domain = await startTestDomain(
    'audit',
    { ADMIN_USERS: 'auditor', AUDIT_RETENTION_DAYS: '30' },
    { clock: () => Date.now() + clockOffsetMs },
  );
  await dora().secrets.create({ name: 'DEPLOY_TOKEN', value: SECRET_VALUE });
  await dora().settings.save({ llm_model: 'openai/gpt-4o', llm_api_key: LLM_KEY, language: 'fr' });
  await refusal(dora().secrets.delete({ secret_id: 'NO_SUCH_SECRET' }));
  await dora().secrets.delete({ secret_id: 'DEPLOY_TOKEN' });
});
afterAll(() => domain?.stop());

describe('the audit log', () => {
  it('records who changed what, with names and ids only, and its outcome', async () => {
    const { items } = await admin().audit.search({ user_id: 'dora' });
    expect(items.map((e) => [e.action, e.outcome, e.target, e.fields])).toEqual([
      ['secrets.delete', 'ok', { secret_id: 'DEPLOY_TOKEN' }, ['secret_id']],
      ['secrets.delete', 'NOT_FOUND', { secret_id: 'NO_SUCH_SECRET' }, ['secret_id']],
      ['settings.save', 'ok', {}, ['language', 'llm_api_key', 'llm_model']],
      ['secrets.create', 'ok', { name: 'DEPLOY_TOKEN' }, ['name', 'value']],
    ]);
    expect(items.every((e) => e.user_id === 'dora' && e.via === 'internal')).toBe(true);
    const stored = JSON.stringify(
      await domain.deps.db.models.AuditEvent.find({ at: { $lte: new Date() } })
        .sort({ at: -1, _id: -1 })
        .lean(),
    );
    expect(stored).not.toContain(SECRET_VALUE);
    expect(stored).not.toContain(LLM_KEY);
    expect(stored).not.toContain('openai/gpt-4o');
  });

  it('is read by administrators only', async () => {
    expect(await refusal(dora().audit.search({}))).toMatchObject({ code: 'FORBIDDEN', reason: 'not_an_admin' });
    // The refused read is no change: nothing recorded for it.
    expect((await admin().audit.search({ user_id: 'dora' })).items).toHaveLength(4);
  });

  it('filters by action and pages, newest first', async () => {
    const deletes = await admin().audit.search({ action: 'secrets.delete', limit: 1 });
    expect(deletes.items.map((e) => e.outcome)).toEqual(['ok']);
    const next = await admin().audit.search({ action: 'secrets.delete', limit: 1, page_id: deletes.next_page_id });
    expect(next.items.map((e) => e.outcome)).toEqual(['NOT_FOUND']);
    expect(next.next_page_id).toBeNull();
  });

  it('lets entries past the retention go', async () => {
    clockOffsetMs = 31 * 86_400_000; // a month on: the next write sweeps
    try {
      await dora().secrets.create({ name: 'LATER', value: 'x' });
      await domain.deps.services.audit.drain();
      const { items } = await admin().audit.search({ user_id: 'dora' });
      expect(items.map((e) => e.action)).toEqual(['secrets.create']);
      expect(items[0]!.target).toEqual({ name: 'LATER' });
    } finally {
      clockOffsetMs = 0;
    }
  });
});
