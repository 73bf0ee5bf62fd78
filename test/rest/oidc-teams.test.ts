// A team's first day with OpenID Connect (docs/organizations.md, docs/oidc.md): with no
// administrator named for the provider's users, the first person to sign in becomes one; they
// create an organisation and invite a colleague by email; the colleague's first sign-in through
// the provider joins them to it (no link needed) and makes it their current organisation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/processes.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { signIn, startOidcProvider, type TestProvider } from '../helpers/oidc-provider.js';

let app: TestApp;
let provider: TestProvider;

const ACCOUNTS = {
  ada: { email: 'ada@example.com', email_verified: true, groups: [] },
  bo: { email: 'Bo@Example.com', email_verified: true, groups: [] },
};

beforeAll(async () => {
  const port = await freePort();
  app = await startTestApp('oidc-teams', { OIDC_ISSUER: `http://127.0.0.1:${port}`, OIDC_CLIENT_ID: 'acp-test' });
  provider = await startOidcProvider(port, `${app.url}/oauth/oidc/callback`, ACCOUNTS);
}, 60_000);

afterAll(async () => {
  await provider?.close();
  await app?.stop();
});

const session = async (login: string) => {
  const cookie = `acp_session=${(await signIn(app.url, login)).jar.get(app.url, 'acp_session')!}`;
  return (method: string, url: string, body?: unknown) =>
    call(app, method, url, { headers: { cookie, origin: app.url }, ...(body === undefined ? {} : { body }) });
};

describe('a team signing in through its identity provider', () => {
  it('makes the first user an administrator, and joins an invited colleague at their first sign-in', async () => {
    const ada = await session('ada');
    expect((await ada('GET', '/api/audit/events/search?limit=1')).status).toBe(200);
    const created = await ada('POST', '/api/organizations', { name: 'Research' });
    expect(created).toMatchObject({ status: 201, body: { contact_email: 'ada@example.com' } });
    const org = created.body.id as string;
    const invited = await ada('POST', `/api/organizations/${org}/members/invite`, { emails: ['bo@example.com'], role: 'admin' });
    expect(invited.status).toBe(201);

    const bo = await session('bo');
    // Only the first sign-in makes an administrator.
    expect((await bo('GET', '/api/audit/events/search?limit=1')).status).toBe(403);
    expect(await bo('GET', '/api/organizations')).toMatchObject({
      status: 200,
      body: {
        current_org_id: org,
        items: [
          { id: 'bo@example.com', is_personal: true },
          { id: org, name: 'Research' },
        ],
      },
    });
    expect((await bo('GET', `/api/organizations/${org}/me`)).body).toMatchObject({ role: 'admin', email: 'bo@example.com' });
    expect((await ada('GET', `/api/organizations/${org}/members/invite`)).body.items).toEqual([]);
    // The audit log has the join as bo's, by the web sign-in.
    const log = await ada('GET', `/api/audit/events/search?user_id=bo@example.com&action=organizationMembers.acceptInvitation`);
    expect(log.body.items).toEqual([expect.objectContaining({ via: 'web', outcome: 'ok', target: { org_id: org } })]);
    // Signing in again joins nothing twice.
    const again = await session('bo');
    expect((await again('GET', `/api/organizations/${org}/members/count`)).body).toBe(2);
  });
});
