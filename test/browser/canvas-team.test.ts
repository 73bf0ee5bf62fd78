// A team's first day in Agent Canvas (docs/organizations.md, docs/oidc.md), in Chromium against
// a real OpenID provider (oidc-provider on localhost; the service on 127.0.0.1): nobody mints a
// key. The first person to sign in is the administrator; with their browser session they create
// the organisation, give it an LLM and invite a colleague by email. The colleague signs in
// through the provider in a second browser, joins by that sign-in, and Canvas finds the
// organisation's LLM set up (no onboarding) and starts a conversation in Canvas that runs on it
// (its calls reach the loopback LLM with the organisation's key, through the gateway), while
// the key stays unreadable and the organisation's admin routes answer the member 403; made
// public, the conversation is read by a third person until made private; removed,
// the member is signed out and their sandbox paused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { freePort } from '../../src/processes.js';
import { agentCanvasBuild } from '../helpers/agent-canvas.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { eventually } from '../helpers/eventually.js';
import { startStubLlm, type StubLlm } from '../helpers/stub-llm.js';
import { startOidcProvider, type TestProvider } from '../helpers/oidc-provider.js';

let app: TestApp;
let provider: TestProvider;
let browser: TestBrowser;
let llm: StubLlm;
const FINAL = 'Done on the team LLM.';
const ORG_KEY = 'sk-team-canvas-7c1e';

beforeAll(async () => {
  llm = await startStubLlm({ reply: 'Team run', steps: [{ tool: 'finish', arguments: { message: FINAL } }] });
  const port = await freePort();
  app = await startTestApp('canvas-team', {
    SANDBOX_STARTUP_TIMEOUT_MS: '180000',
    WEB_UI: 'canvas',
    AGENT_CANVAS_DIR: agentCanvasBuild(),
    OIDC_ISSUER: `http://localhost:${port}`,
    OIDC_CLIENT_ID: 'acp-test',
  });
  provider = await startOidcProvider(
    port,
    `${app.url}/oauth/oidc/callback`,
    {
      ada: { email: 'ada@example.com', email_verified: true },
      bo: { email: 'bo@example.com', email_verified: true },
      cy: { email: 'cy@example.com', email_verified: true },
    },
    'localhost',
  );
  browser = await launchBrowser('canvas-team');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await provider?.close();
  await app?.stop();
  await llm?.close();
});

/** Signs `login` in from Canvas's first page through the provider, in a browser of their own; Canvas then loads. */
async function signInToCanvas(
  login: string,
): Promise<{ page: Page; api: (method: string, path: string, body?: unknown) => ReturnType<typeof call> }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${app.url}/`);
  expect(new URL(page.url()).pathname).toBe('/signin');
  await Promise.all([page.waitForURL((url) => url.hostname === 'localhost'), page.click('#oidc')]);
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any');
  await page.click('button[type=submit]');
  const consent = page.getByRole('button', { name: 'Continue' });
  await consent.waitFor();
  await Promise.all([page.waitForURL(`${app.url}/`), consent.click()]);
  await page.locator('[data-testid=backend-status-dot][data-status=connected]').first().waitFor({ timeout: 60_000 });
  const session = (await page.context().cookies(app.url)).find((c) => c.name === 'acp_session')!.value;
  // The browser's own session, as its pages send it (the cookie, from this origin).
  const api = (method: string, path: string, body?: unknown) =>
    call(app, method, path, { headers: { cookie: `acp_session=${session}`, origin: app.url }, ...(body === undefined ? {} : { body }) });
  return { page, api };
}

describe('a team in Agent Canvas, signed in through its identity provider', () => {
  it(
    'needs no operator: the first user sets the team up, the invited colleague finds its LLM ready and its key unreadable',
    { timeout: 8 * 60_000 },
    async () => {
      const ada = await signInToCanvas('ada');
      // No LLM of her own: Canvas asks her to set one up (what the member below is spared).
      await ada.page.getByTestId('onboarding-agent-next').waitFor();
      await browser.screenshot(ada.page, 'admin-signed-in');
      const org = await ada.api('POST', '/api/organizations', { name: 'Canvas Team' });
      expect(org.status, org.text).toBe(201);
      const orgId = org.body.id as string;
      expect(
        (
          await ada.api('PATCH', `/api/organizations/${orgId}/settings`, {
            agent_settings_diff: { llm: { model: 'openai/stub-model', base_url: llm.url, api_key: ORG_KEY } },
          })
        ).status,
      ).toBe(200);
      expect((await ada.api('POST', `/api/organizations/${orgId}/members/invite`, { emails: ['bo@example.com'] })).status).toBe(201);

      const bo = await signInToCanvas('bo');
      // Joined by signing in, acting in the organisation, whose LLM Canvas finds set up: no onboarding.
      expect((await bo.api('GET', '/api/organizations')).body.current_org_id).toBe(orgId);
      await bo.page.getByText("Let's Start Building!").waitFor();
      expect(await bo.page.getByTestId('onboarding-agent-next').count()).toBe(0);
      expect(await bo.page.getByRole('button', { name: 'Set up LLM' }).count()).toBe(0);
      // Canvas's backend and organisation switcher names the team.
      expect(
        await bo.page.locator('[data-testid=backend-status-dot]').first().locator('xpath=../..').getByRole('combobox').inputValue(),
      ).toBe('OpenHands Cloud – Canvas Team');
      const settings = await bo.api('GET', '/api/v1/settings');
      expect(settings.body).toMatchObject({
        llm_api_key_set: true,
        agent_settings: { llm: { model: 'openai/stub-model', api_key: null } },
      });
      await browser.screenshot(bo.page, 'member-signed-in');
      // The key nowhere in what the member can read; the admin routes refused.
      for (const path of [
        '/api/v1/settings',
        `/api/organizations/${orgId}/settings`,
        '/api/keys/llm/byor',
        `/api/organizations/${orgId}/me`,
      ]) {
        expect((await bo.api('GET', path)).text).not.toContain(ORG_KEY);
      }
      expect(await bo.api('PATCH', `/api/organizations/${orgId}/settings`, { llm_api_key: 'sk-mine' })).toMatchObject({ status: 403 });
      expect(await bo.api('GET', `/api/organizations/${orgId}/members/invite`)).toMatchObject({ status: 403 });
      expect(await bo.api('GET', `/api/organizations/${orgId}/conversations`)).toMatchObject({ status: 403 });
      expect(await bo.api('GET', '/api/audit/events/search')).toMatchObject({ status: 403 });

      // A conversation from Canvas's home runs on the organisation's LLM, its key sent by the gateway.
      await bo.page.locator('[contenteditable=true]').first().click();
      await bo.page.keyboard.type('Say done');
      await bo.page.keyboard.press('Enter');
      await bo.page.waitForURL(/\/conversations\/[0-9a-f]{32}/, { timeout: 5 * 60_000 });
      await bo.page
        .getByText(FINAL)
        .first()
        .waitFor({ timeout: 3 * 60_000 });
      await browser.screenshot(bo.page, 'member-conversation');
      await eventually('the LLM called with the organisation key', async () =>
        llm.requests.some((r) => r.headers.authorization === `Bearer ${ORG_KEY}`),
      );
      const id = /\/conversations\/([0-9a-f]{32})/.exec(bo.page.url())![1]!;
      expect((await ada.api('GET', `/api/organizations/${orgId}/conversations`)).body.items).toEqual([
        expect.objectContaining({ id, user_id: 'bo@example.com', llm_model: 'openai/stub-model' }),
      ]);
      expect(String(await bo.page.evaluate('document.body.innerText'))).not.toContain(ORG_KEY);

      // Made public, it is readable by its link in a third, signed-out browser (the service's shared
      // page; Agent Canvas 1.20's own shared page reads from an agent-server backend, not from this
      // one, and asks nothing of it), and through the shared routes by a person outside the
      // organisation, read-only; made private, neither.
      const share = async (on: boolean) =>
        expect((await bo.api('PATCH', `/api/v1/app-conversations/${id}`, { public: on })).status).toBe(200);
      await share(true);
      const reader = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const sharedLink = `${app.url}/shared/conversations/${id}`;
      // The page shows the events stored when it is read: the final one arrives by webhook, maybe after Canvas showed it.
      await eventually('the final message stored', async () => {
        expect((await reader.goto(sharedLink))!.status()).toBe(200);
        return (await reader.textContent('#events'))?.includes(FINAL);
      });
      expect(await reader.content()).not.toContain(ORG_KEY);
      expect((await reader.context().cookies(app.url)).map((c) => c.name)).not.toContain('acp_session');
      await browser.screenshot(reader, 'shared-signed-out');
      const cy = await signInToCanvas('cy');
      const shared = async () => (await cy.api('GET', `/api/shared-conversations?ids=${id}`)).body;
      expect(await shared()).toEqual([expect.objectContaining({ id, created_by_user_id: 'bo@example.com' })]);
      const events = (await cy.api('GET', `/api/shared-events/search?conversation_id=${id}`)).body.items as unknown[];
      expect(JSON.stringify(events)).toContain(FINAL);
      expect(JSON.stringify(events)).not.toContain(ORG_KEY);
      expect(
        await cy.api('POST', `/api/v1/app-conversations/${id}/send-message`, { content: [{ type: 'text', text: 'hi' }] }),
      ).toMatchObject({ status: 404 });
      await share(false);
      expect(await shared()).toEqual([null]);
      expect((await reader.reload())!.status()).toBe(404);
      expect(await reader.textContent('#not-shared')).toContain('not shared');
      expect(await reader.content()).not.toContain(FINAL);

      // The invitation link, opened in a signed-in browser: its page names the organisation and the
      // role, and joins on a click (opening it changes nothing); Canvas then acts in the team.
      const invited = await ada.api('POST', `/api/organizations/${orgId}/members/invite`, { emails: ['cy@example.com'], role: 'admin' });
      const link = invited.body.successful[0].invite_url as string;
      expect(new URL(link).pathname).toBe('/invitations/accept');
      await cy.page.goto(link);
      expect(await cy.page.textContent('#org')).toBe('Canvas Team');
      expect(await cy.page.textContent('#role')).toBe('admin');
      expect((await cy.api('GET', `/api/organizations/${orgId}/me`)).status).toBe(404);
      await Promise.all([cy.page.waitForURL(`${app.url}/`), cy.page.click('#join')]);
      expect((await cy.api('GET', `/api/organizations/${orgId}/me`)).body).toMatchObject({ role: 'admin' });
      expect((await cy.api('GET', '/api/organizations')).body.current_org_id).toBe(orgId);
      await cy.page.goto(link);
      expect(await cy.page.textContent('#unknown')).toMatch(/already used/);

      // Removed, the member is signed out, and the organisation's hold on their sandbox ends.
      expect((await ada.api('DELETE', `/api/organizations/${orgId}/members/bo@example.com`)).status).toBe(200);
      expect((await bo.api('GET', '/api/v1/settings')).status).toBe(401);
      await bo.page.reload();
      await bo.page.waitForURL((url) => url.pathname === '/signin');
      const sandbox = await app.rawCollection('sandboxes').findOne({ userId: 'bo@example.com' });
      expect(sandbox?.desired).toBe('paused');

      // Every step is in the audit log with its actor.
      const log = (await ada.api('GET', '/api/audit/events/search?limit=50')).body.items as { user_id: string; action: string }[];
      const steps = log.map((e) => `${e.user_id} ${e.action}`);
      for (const step of [
        'ada@example.com oidc.signIn',
        'ada@example.com organizations.create',
        'ada@example.com organizations.updateSettings',
        'ada@example.com organizationMembers.invite',
        'bo@example.com organizationMembers.acceptInvitation',
        'bo@example.com oidc.signIn',
        'bo@example.com appConversations.start',
        'bo@example.com appConversationActions.update',
        'cy@example.com oidc.signIn',
        'cy@example.com organizationMembers.acceptInvitation',
        'cy@example.com organizations.switch',
      ]) {
        expect(steps).toContain(step);
      }
    },
  );
});
