// OpenID Connect sign-in against a real provider (oidc-provider on 127.0.0.1, its development
// login and consent pages; test/helpers/oidc-provider.ts): the authorization code flow with
// PKCE from the service's sign-in page to a browser session for the user the ID token names —
// created by that first sign-in, usable at once — and refused for an account outside the
// allowed domains and groups, for a sign-in whose state was tampered with or began elsewhere,
// and with a clear 502 while the provider is down.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/processes.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { signIn, startOidcProvider, type TestProvider } from '../helpers/oidc-provider.js';

let app: TestApp;
let provider: TestProvider;
let providerPort: number;

const ACCOUNTS = {
  ada: { email: 'Ada@Example.com', email_verified: true, groups: ['engineering'] },
  bo: { email: 'bo@example.com', email_verified: true, groups: ['engineering', 'platform'] },
  eve: { email: 'eve@elsewhere.example', email_verified: true, groups: ['engineering'] },
  mal: { email: 'mal@example.com', email_verified: true, groups: ['sales'] },
  ghost: { email: 'ghost@example.com', email_verified: false, groups: ['engineering'] },
};

beforeAll(async () => {
  providerPort = await freePort();
  app = await startTestApp('oidc', {
    OIDC_ISSUER: `http://127.0.0.1:${providerPort}`,
    OIDC_CLIENT_ID: 'acp-test',
    OIDC_ALLOWED_DOMAINS: 'example.com',
    OIDC_ALLOWED_GROUPS: 'engineering',
    OIDC_ADMIN_GROUPS: 'platform',
    OIDC_BUTTON_LABEL: 'Sign in with Example SSO',
  });
  provider = await startOidcProvider(providerPort, `${app.url}/oauth/oidc/callback`, ACCOUNTS);
}, 60_000);

afterAll(async () => {
  await provider?.close();
  await app?.stop();
});

const withCookie = (session: string) => ({ headers: { cookie: `acp_session=${session}` } });

describe('OpenID Connect sign-in', () => {
  it('offers the provider on the sign-in page', async () => {
    const page = await fetch(`${app.url}/signin?next=/settings`);
    expect(await page.text()).toContain('<a class="oidc" id="oidc" href="/oauth/oidc/login?next=%2Fsettings">Sign in with Example SSO</a>');
  });

  it('signs a new user in with PKCE, as their verified email, to a session that works at once', async () => {
    const { final, jar } = await signIn(app.url, 'ada', '/settings');
    expect(final.status, final.text).toBe(200);
    expect(final.url).toMatch(/\/oauth\/oidc\/callback\?code=/);
    // The page moves on to `next` itself (the Strict session cookie is not sent on the provider's redirect chain).
    expect(final.text).toContain('<meta http-equiv="refresh" content="0;url=/settings">');
    const session = jar.get(app.url, 'acp_session')!;
    expect(session).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(jar.get(app.url, 'acp_oidc')).toBeUndefined();

    const who = await call(app, 'GET', '/api/auth/session', withCookie(session));
    expect(who.status).toBe(200);
    expect(who.body).toMatchObject({ user_id: 'ada@example.com' });
    const settings = await call(app, 'POST', '/api/v1/settings', {
      headers: { cookie: `acp_session=${session}`, origin: app.url },
      body: { language: 'de' },
    });
    expect(settings.status).toBe(200);
    // The sign-in is in the audit log as hers.
    const audit = await app.server.deps.services.audit.search('default', { action: 'oidc.signIn', limit: 10 });
    expect(audit.items[0]).toMatchObject({ user_id: 'ada@example.com', outcome: 'ok', via: 'web' });
    expect(
      (await call(app, 'DELETE', '/api/auth/session', { headers: { cookie: `acp_session=${session}`, origin: app.url } })).status,
    ).toBe(200);
    expect((await call(app, 'GET', '/api/auth/session', withCookie(session))).status).toBe(401);
  });

  it('signs out at the provider too: the home page sends the browser on to its end-session endpoint, which comes back to sign-in', async () => {
    const session = (await signIn(app.url, 'ada')).jar.get(app.url, 'acp_session')!;
    const home = await fetch(`${app.url}/`, { headers: { cookie: `acp_session=${session}` } });
    expect(await home.text()).toContain('data-next="/oauth/oidc/logout"');
    const logout = await fetch(`${app.url}/oauth/oidc/logout`, { redirect: 'manual' });
    expect(logout.status).toBe(302);
    const to = new URL(logout.headers.get('location')!);
    expect(to.origin).toBe(`http://127.0.0.1:${providerPort}`);
    expect(to.searchParams.get('client_id')).toBe('acp-test');
    expect(to.searchParams.get('post_logout_redirect_uri')).toBe(`${app.url}/signin`);
    // The provider accepts it (a registered return address): its sign-out confirmation, not an error.
    const atProvider = await fetch(to, { redirect: 'manual' });
    expect(atProvider.status).toBe(200);
    expect(await atProvider.text()).toMatch(/logout|sign-?out/i);
  });

  it('makes a member of OIDC_ADMIN_GROUPS an administrator, as of their latest sign-in', async () => {
    const auditAs = async (login: string) => {
      const session = (await signIn(app.url, login)).jar.get(app.url, 'acp_session')!;
      return (await call(app, 'GET', '/api/audit/events/search?limit=1', withCookie(session))).status;
    };
    expect(await auditAs('bo')).toBe(200);
    expect(await auditAs('ada')).toBe(403);
    // Taken out of the group at the provider: no longer an administrator from the next sign-in.
    ACCOUNTS.bo.groups = ['engineering'];
    expect(await auditAs('bo')).toBe(403);
  });

  it('refuses an account outside the allowed domains or groups, or without a verified email', async () => {
    for (const login of ['eve', 'mal', 'ghost']) {
      const { final, jar } = await signIn(app.url, login);
      expect(final.status, `${login}: ${final.text}`).toBe(403);
      expect(jar.get(app.url, 'acp_session'), login).toBeUndefined();
    }
    // The audit entry is written beside the answer, not before it: the last may land just after.
    const refused = await eventually('the three refusals in the audit log', async () => {
      const found = await app.server.deps.services.audit.search('default', { action: 'oidc.signIn', user_id: '-', limit: 10 });
      return found.items.length >= 3 ? found : null;
    });
    expect(refused.items.map((e) => e.outcome)).toEqual(['FORBIDDEN', 'FORBIDDEN', 'FORBIDDEN']);
  });

  it('refuses a callback without its sign-in’s cookie, or with another state', async () => {
    const { final } = await signIn(app.url, 'ada');
    const callback = new URL(final.url);
    const bare = await fetch(callback, { redirect: 'manual' });
    expect(bare.status).toBe(401);
    expect(bare.headers.getSetCookie().join()).not.toContain('acp_session=');

    const begun = await fetch(`${app.url}/oauth/oidc/login`, { redirect: 'manual' });
    const cookie = begun.headers.getSetCookie()[0]!.split(';')[0]!;
    callback.searchParams.set('state', 'not-the-state');
    const forged = await fetch(callback, { redirect: 'manual', headers: { cookie } });
    expect(forged.status).toBe(401);
  });

  it('answers 502 while the provider cannot be reached, and works again when it is back', async () => {
    await provider.close();
    // A fresh discovery is needed: a new service (the running one keeps the document an hour).
    const other = await startTestApp('oidc-down', { OIDC_ISSUER: `http://127.0.0.1:${providerPort}`, OIDC_CLIENT_ID: 'acp-test' });
    try {
      const down = await fetch(`${other.url}/oauth/oidc/login`, { redirect: 'manual' });
      expect(down.status).toBe(502);
      expect(await down.text()).toContain('The identity provider cannot be reached');
    } finally {
      await other.stop();
    }
    provider = await startOidcProvider(providerPort, `${app.url}/oauth/oidc/callback`, ACCOUNTS);
    expect((await signIn(app.url, 'ada')).final.status).toBe(200);
  });
});
