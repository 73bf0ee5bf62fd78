// Organisations isolate their members' data from each other (docs/organizations.md): every
// route under /api/organizations/{org_id}, called with another organisation's id by someone who
// is no member of it, answers as if it did not exist (404), whatever its method, and changes
// nothing; an owner of one organisation naming the other's members, invitations or secrets
// under their own organisation finds none of them. The route list is the contract's, so a
// route added later is covered without being named here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTRACT_ROUTES } from '../contract-routes.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
const keys: Record<string, string> = {};
let orgA: string;
let orgB: string;
let invitationOfA: string;

const as = (user: string) => ({ headers: { authorization: `Bearer ${keys[user]}` } });

/** An organisation made by the administrator, handed to `owner`, the administrator then gone from it. */
async function orgOf(name: string, owner: string): Promise<string> {
  const id = (await call(app, 'POST', '/api/organizations', { ...as('root'), body: { name } })).body.id as string;
  const invited = await call(app, 'POST', `/api/organizations/${id}/members/invite`, {
    ...as('root'),
    body: { emails: [`${owner}@example.com`], role: 'owner' },
  });
  const token = new URL(invited.body.successful[0].invite_url).searchParams.get('token');
  expect((await call(app, 'POST', '/api/organizations/members/invite/accept', { ...as(owner), body: { token } })).status).toBe(200);
  expect((await call(app, 'DELETE', `/api/organizations/${id}/members/root`, as(owner))).status).toBe(200);
  return id;
}

beforeAll(async () => {
  app = await startTestApp('org-isolation', { ADMIN_USERS: 'root' });
  for (const user of ['root', 'alice', 'bob']) {
    keys[user] = await app.keyFor(user);
    await call(app, 'POST', '/api/v1/settings', { ...as(user), body: { email: `${user}@example.com` } });
  }
  orgA = await orgOf('Org A', 'alice');
  orgB = await orgOf('Org B', 'bob');
  await call(app, 'PATCH', `/api/organizations/${orgA}/settings`, { ...as('alice'), body: { llm_api_key: 'sk-a-only' } });
  await call(app, 'POST', `/api/organizations/${orgA}/secrets`, { ...as('alice'), body: { name: 'A_TOKEN', value: 'a-value' } });
  await call(app, 'PATCH', `/api/organizations/${orgA}/budgets`, { ...as('alice'), body: { monthly_limit: 5 } });
  const invited = await call(app, 'POST', `/api/organizations/${orgA}/members/invite`, {
    ...as('alice'),
    body: { emails: ['carol@example.com'] },
  });
  invitationOfA = invited.body.successful[0].id;
});
afterAll(() => app.stop());

const ORG_ROUTES = CONTRACT_ROUTES.filter((route) => route.includes('{org_id}'));

describe('one organisation seen from another', () => {
  it('covers every organisation route of the contract', () => {
    expect(ORG_ROUTES.length).toBeGreaterThanOrEqual(25);
  });

  it.each(ORG_ROUTES)("answers %s with another organisation's id as missing", async (route) => {
    const [method, template] = route.split(' ') as [string, string];
    const path = template
      .replace('{org_id}', orgA)
      .replace('{user_id}', 'alice')
      .replace('{invitation_id}', invitationOfA)
      .replace('{name}', 'A_TOKEN');
    const body = method === 'GET' || method === 'DELETE' ? undefined : {};
    const res = await call(app, method, path, { ...as('bob'), ...(body ? { body } : {}) });
    expect(res.status, `${route}: ${res.text}`).toBe(404);
    expect(res.body.detail).toBe(`Organization with id "${orgA}" not found`);
  });

  it('left organisation A as it was', async () => {
    const alice = (path: string) => call(app, 'GET', `/api/organizations/${orgA}${path}`, as('alice'));
    expect((await alice('')).body).toMatchObject({ id: orgA, name: 'Org A' });
    expect((await alice('/members')).body.items.map((m: { user_id: string }) => m.user_id)).toEqual(['alice']);
    expect((await alice('/settings')).body.llm_api_key_set).toBe(true);
    expect((await alice('/secrets')).body.secrets).toEqual([{ name: 'A_TOKEN', description: '' }]);
    expect((await alice('/budgets')).body.monthly_limit).toBe(5);
    expect((await alice('/members/invite')).body.items.map((i: { id: string }) => i.id)).toEqual([invitationOfA]);
  });

  it("finds none of A's members, invitations or secrets under B, even for B's owner", async () => {
    const underB = (method: string, path: string, body?: unknown) =>
      call(app, method, `/api/organizations/${orgB}${path}`, { ...as('bob'), ...(body ? { body } : {}) });
    expect(await underB('PATCH', '/members/alice', { role: 'member' })).toMatchObject({ status: 404 });
    expect(await underB('DELETE', '/members/alice')).toMatchObject({ status: 404 });
    expect(await underB('DELETE', `/members/invite/${invitationOfA}`)).toMatchObject({ status: 404 });
    expect(await underB('PUT', '/secrets/A_TOKEN', { value: 'stolen' })).toMatchObject({ status: 404 });
    expect(await underB('DELETE', '/secrets/A_TOKEN')).toMatchObject({ status: 404 });
    expect((await underB('GET', '/secrets')).body).toEqual({ secrets: [] });
    expect((await underB('GET', '/settings')).body.llm_api_key_set).toBe(false);
    expect((await underB('GET', '/members')).body.items.map((m: { user_id: string }) => m.user_id)).toEqual(['bob']);
    expect((await underB('GET', '/budgets')).body).toMatchObject({ enabled: false, current_spend: 0 });
    // And the secret still holds its value, which only A's conversations get.
    expect(await app.server.deps.services.orgSecrets.resolve(orgA)).toMatchObject([{ name: 'A_TOKEN', value: 'a-value' }]);
  });

  it('refuses B’s owner an X-Org-Id naming A on routes without an organisation in the path', async () => {
    const res = await call(app, 'POST', '/api/v1/app-conversations', {
      headers: { ...as('bob').headers, 'x-org-id': orgA },
      body: {},
    });
    expect(res).toMatchObject({ status: 403, body: { detail: 'User is not a member of the requested organization' } });
    expect((await call(app, 'GET', `/api/organizations/${orgA}/conversations`, as('alice'))).body.items).toEqual([]);
  });
});
