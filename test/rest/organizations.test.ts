// Organisations as a team uses them (docs/organizations.md), over REST in OpenHands Cloud's
// shapes and over tRPC with the same policy: an administrator creates one and owns it, invites
// by email (the link shown once), the invited user joins with the token; roles decide who may
// see, change, invite, promote and remove (roles.ts); the LLM key the organisation's members use
// is never read back; an organisation always keeps an owner; deleting it takes its memberships.
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../routers/index.js';
import { transformer } from '../../src/trpc/transformer.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
const keys: Record<string, string> = {};
const ORG_LLM_KEY = 'sk-org-team-4b1d9e77';

const as = (user: string, extra: Record<string, string> = {}) => ({ headers: { authorization: `Bearer ${keys[user]}`, ...extra } });

beforeAll(async () => {
  app = await startTestApp('organizations', { ADMIN_USERS: 'root' });
  for (const user of ['root', 'bob', 'carol', 'dave', 'erin']) {
    keys[user] = await app.keyFor(user);
    await call(app, 'POST', '/api/v1/settings', { ...as(user), body: { email: `${user.toUpperCase()}@Example.com` } });
  }
});
afterAll(() => app.stop());

async function createOrg(name: string): Promise<string> {
  const created = await call(app, 'POST', '/api/organizations', { ...as('root'), body: { name } });
  expect(created.status).toBe(201);
  return created.body.id as string;
}

/** Invites by email as `inviter` and joins as `user` with the link's token. */
async function join(orgId: string, inviter: string, user: string, role: 'owner' | 'admin' | 'member') {
  const invited = await call(app, 'POST', `/api/organizations/${orgId}/members/invite`, {
    ...as(inviter),
    body: { emails: [`${user}@example.com`], role },
  });
  expect(invited.status).toBe(201);
  const token = new URL(invited.body.successful[0].invite_url).searchParams.get('token')!;
  const accepted = await call(app, 'POST', '/api/organizations/members/invite/accept', { ...as(user), body: { token } });
  expect(accepted).toMatchObject({ status: 200, body: { success: true, org_id: orgId, role } });
}

describe('creating and listing organisations', () => {
  it('lets an administrator create one and own it; names are unique whatever their case; others are refused', async () => {
    const created = await call(app, 'POST', '/api/organizations', { ...as('root'), body: { name: 'Platform Team' } });
    expect(created).toMatchObject({
      status: 201,
      body: { name: 'Platform Team', is_personal: false, contact_email: 'root@example.com', id: expect.any(String) },
    });
    const me = await call(app, 'GET', `/api/organizations/${created.body.id}/me`, as('root'));
    expect(me.body).toMatchObject({ org_id: created.body.id, user_id: 'root', role: 'owner', status: 'active' });
    expect(me.body.permissions).toContain('delete_organization');

    expect(await call(app, 'POST', '/api/organizations', { ...as('root'), body: { name: 'platform team' } })).toMatchObject({
      status: 409,
      body: { detail: 'Organization with name "platform team" already exists' },
    });
    expect(await call(app, 'POST', '/api/organizations', { ...as('bob'), body: { name: 'Bob Co' } })).toMatchObject({ status: 403 });
    expect(await call(app, 'POST', '/api/organizations', { ...as('root'), body: { name: '  ' } })).toMatchObject({ status: 422 });
  });

  it('lists the personal organisation first, then the teams by name; switching changes current_org_id', async () => {
    const zeta = await createOrg('Zeta');
    const alpha = await createOrg('Alpha');
    const listed = await call(app, 'GET', '/api/organizations', as('root'));
    const names = listed.body.items.map((o: { name: string }) => o.name);
    expect(names[0]).toBe('root');
    expect(names.indexOf('Alpha')).toBeLessThan(names.indexOf('Zeta'));
    expect(listed.body).toMatchObject({ current_org_id: 'root', next_page_id: null });
    expect(listed.body.items[0]).toMatchObject({ id: 'root', is_personal: true });

    expect(await call(app, 'POST', `/api/organizations/${alpha}/switch`, as('root'))).toMatchObject({ status: 200, body: { id: alpha } });
    expect((await call(app, 'GET', '/api/organizations', as('root'))).body.current_org_id).toBe(alpha);
    const paged = await call(app, 'GET', '/api/organizations?limit=1&page_id=1', as('root'));
    expect(paged.body.items).toHaveLength(1);
    expect(paged.body.next_page_id).toBe('2');
    await call(app, 'POST', `/api/organizations/root/switch`, as('root'));
    expect((await call(app, 'GET', '/api/organizations', as('root'))).body.current_org_id).toBe('root');
    // Nobody else sees them, or reaches them by id.
    expect((await call(app, 'GET', '/api/organizations', as('erin'))).body.items.map((o: { id: string }) => o.id)).toEqual(['erin']);
    expect(await call(app, 'GET', `/api/organizations/${zeta}/me`, as('erin'))).toMatchObject({ status: 404 });
    expect(await call(app, 'POST', `/api/organizations/${zeta}/switch`, as('erin'))).toMatchObject({ status: 404 });
  });

  it('refuses an X-Org-Id that contradicts the path', async () => {
    const org = await createOrg('Header Check');
    const res = await call(app, 'GET', `/api/organizations/${org}/me`, as('root', { 'x-org-id': 'root' }));
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/does not match the org in the request path/);
    expect(await call(app, 'GET', `/api/organizations/${org}/me`, as('root', { 'x-org-id': org }))).toMatchObject({ status: 200 });
  });
});

describe('invitations', () => {
  it('shows the link once, lists what is pending, lets the invited user (only) join once', async () => {
    const org = await createOrg('Invites');
    const invited = await call(app, 'POST', `/api/organizations/${org}/members/invite`, {
      ...as('root'),
      body: { emails: ['Bob@Example.com', 'root@example.com'], role: 'member' },
    });
    expect(invited.status).toBe(201);
    expect(invited.body).toMatchObject({
      email_delivery_configured: false,
      successful: [{ email: 'bob@example.com', role: 'member', status: 'pending', inviter_email: 'root@example.com' }],
      failed: [{ email: 'root@example.com', error: 'User is already a member of this organization' }],
    });
    const url = new URL(invited.body.successful[0].invite_url);
    expect(url.pathname).toBe('/invitations/accept'); // its page (src/http/web/invitation-page.ts)
    // Opened signed out, the page is behind the sign-in, which comes back to it.
    const signedOut = await fetch(url, { redirect: 'manual' });
    expect(signedOut.status).toBe(302);
    expect(signedOut.headers.get('location')).toBe(`/signin?next=${encodeURIComponent(url.pathname + url.search)}`);
    const token = url.searchParams.get('token')!;
    expect(token).toMatch(/^inv-[0-9A-Za-z]{48}$/);

    const pending = await call(app, 'GET', `/api/organizations/${org}/members/invite`, as('root'));
    expect(pending.body.items).toEqual([expect.objectContaining({ email: 'bob@example.com', invite_url: null })]);
    expect(pending.text).not.toContain(token);
    const stored = await app.rawCollection('org_invitations').findOne({ orgId: org });
    expect(JSON.stringify(stored)).not.toContain(token);

    const accept = (user: string, t = token) =>
      call(app, 'POST', '/api/organizations/members/invite/accept', { ...as(user), body: { token: t } });
    expect(await accept('carol')).toMatchObject({ status: 403, body: { detail: 'email_mismatch' } });
    expect(await accept('bob')).toMatchObject({ status: 200, body: { success: true, org_id: org, org_name: 'Invites', role: 'member' } });
    expect(await accept('bob')).toMatchObject({ status: 400, body: { detail: 'invitation_invalid' } });
    expect(await accept('bob', 'inv-unknown')).toMatchObject({ status: 400, body: { detail: 'invitation_invalid' } });
    expect((await call(app, 'GET', `/api/organizations/${org}/me`, as('bob'))).body).toMatchObject({ role: 'member' });
    expect((await call(app, 'GET', `/api/organizations/${org}/members/invite`, as('root'))).body.items).toEqual([]);
  });

  it('refuses an expired token and revokes a pending invitation once', async () => {
    const org = await createOrg('Expiring');
    const invite = (email: string) =>
      call(app, 'POST', `/api/organizations/${org}/members/invite`, { ...as('root'), body: { emails: [email] } });
    const first = await invite('carol@example.com');
    await app
      .rawCollection('org_invitations')
      .updateOne({ _id: first.body.successful[0].id }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const token = new URL(first.body.successful[0].invite_url).searchParams.get('token');
    expect(await call(app, 'POST', '/api/organizations/members/invite/accept', { ...as('carol'), body: { token } })).toMatchObject({
      status: 400,
      body: { detail: 'invitation_expired' },
    });

    const second = await invite('dave@example.com');
    const id = second.body.successful[0].id;
    const revoke = () => call(app, 'DELETE', `/api/organizations/${org}/members/invite/${id}`, as('root'));
    const revoked = await revoke();
    expect(revoked.status).toBe(204);
    expect(revoked.text).toBe('');
    expect(await revoke()).toMatchObject({ status: 409, body: { detail: 'Only pending invitations can be revoked' } });
    expect(await call(app, 'DELETE', `/api/organizations/${org}/members/invite/nope`, as('root'))).toMatchObject({ status: 404 });
  });

  it('refuses invitations to a personal organisation', async () => {
    const res = await call(app, 'POST', '/api/organizations/root/members/invite', { ...as('root'), body: { emails: ['bob@example.com'] } });
    expect(res).toMatchObject({ status: 403, body: { detail: 'Cannot invite users to a personal workspace' } });
  });
});

describe('roles', () => {
  let org: string;
  beforeAll(async () => {
    org = await createOrg('Roles');
    await join(org, 'root', 'bob', 'admin');
    await join(org, 'root', 'carol', 'member');
  });

  it('gives members their permissions and refuses the rest, with the permission named', async () => {
    const me = (await call(app, 'GET', `/api/organizations/${org}/me`, as('carol'))).body;
    expect(me).toMatchObject({ role: 'member' });
    expect(me.permissions).toContain('view_org_settings');
    expect(me.permissions).not.toContain('edit_org_settings');
    expect(await call(app, 'GET', `/api/organizations/${org}/members`, as('carol'))).toMatchObject({ status: 200 });
    expect(await call(app, 'GET', `/api/organizations/${org}/members/invite`, as('carol'))).toMatchObject({
      status: 403,
      body: { detail: 'Requires invite_user_to_organization permission' },
    });
    expect(
      await call(app, 'POST', `/api/organizations/${org}/members/invite`, { ...as('carol'), body: { emails: ['dave@example.com'] } }),
    ).toMatchObject({ status: 403 });
    expect(await call(app, 'PATCH', `/api/organizations/${org}`, { ...as('carol'), body: { contact_name: 'x' } })).toMatchObject({
      status: 403,
    });
    expect(await call(app, 'DELETE', `/api/organizations/${org}`, as('bob'))).toMatchObject({
      status: 403,
      body: { detail: 'Requires delete_organization permission' },
    });
    // Admins change the contact, only owners the name.
    expect(await call(app, 'PATCH', `/api/organizations/${org}`, { ...as('bob'), body: { contact_name: 'Bob' } })).toMatchObject({
      status: 200,
      body: { contact_name: 'Bob', name: 'Roles' },
    });
    expect(await call(app, 'PATCH', `/api/organizations/${org}`, { ...as('bob'), body: { name: 'Bobs' } })).toMatchObject({ status: 403 });
  });

  it('pages and counts the members', async () => {
    const page = await call(app, 'GET', `/api/organizations/${org}/members?limit=2`, as('carol'));
    expect(page.body).toMatchObject({ current_page: 1, per_page: 2 });
    expect(page.body.items.map((m: { user_id: string }) => m.user_id)).toEqual(['bob', 'carol']);
    expect(page.body.items[0]).toMatchObject({ email: 'bob@example.com', role: 'admin', role_rank: 20, status: 'active' });
    const next = await call(app, 'GET', `/api/organizations/${org}/members?limit=2&page_id=2`, as('carol'));
    expect(next.body).toMatchObject({ current_page: 2, items: [{ user_id: 'root', role: 'owner' }] });
    expect((await call(app, 'GET', `/api/organizations/${org}/members/count`, as('carol'))).body).toBe(3);
    expect((await call(app, 'GET', `/api/organizations/${org}/members/count?email=CAROL`, as('carol'))).body).toBe(1);
  });

  it('reads one member by id (not count or invite, whose paths it shares); nobody outside, in a personal one only its user', async () => {
    const bob = await call(app, 'GET', `/api/organizations/${org}/members/bob`, as('carol'));
    expect(bob).toMatchObject({ status: 200, body: { user_id: 'bob', email: 'bob@example.com', role: 'admin', status: 'active' } });
    expect(await call(app, 'GET', `/api/organizations/${org}/members/erin`, as('carol'))).toMatchObject({
      status: 404,
      body: { detail: 'Member not found in this organization' },
    });
    expect(await call(app, 'GET', `/api/organizations/${org}/members/bob`, as('erin'))).toMatchObject({ status: 404 });
    expect((await call(app, 'GET', `/api/organizations/${org}/members/count`, as('carol'))).body).toBe(3);
    expect(await call(app, 'GET', '/api/organizations/erin/members/erin', as('erin'))).toMatchObject({
      status: 200,
      body: { user_id: 'erin', email: 'erin@example.com', role: 'owner' },
    });
    expect(await call(app, 'GET', '/api/organizations/erin/members/bob', as('erin'))).toMatchObject({ status: 404 });
  });

  it('lets admins manage members but not owners, nobody their own role, and owners anyone', async () => {
    const patch = (actor: string, user: string, role: string) =>
      call(app, 'PATCH', `/api/organizations/${org}/members/${user}`, { ...as(actor), body: { role } });
    expect(await patch('carol', 'bob', 'member')).toMatchObject({ status: 403 });
    expect(await patch('bob', 'bob', 'owner')).toMatchObject({ status: 403, body: { detail: 'Cannot modify your own role' } });
    expect(await patch('bob', 'carol', 'owner')).toMatchObject({ status: 403 });
    expect(await patch('bob', 'root', 'member')).toMatchObject({ status: 403 });
    expect(await patch('bob', 'carol', 'ADMIN')).toMatchObject({ status: 200, body: { user_id: 'carol', role: 'admin', role_id: 2 } });
    expect(await patch('bob', 'carol', 'member')).toMatchObject({ status: 200, body: { role: 'member' } });
    expect(await patch('bob', 'nobody', 'member')).toMatchObject({
      status: 404,
      body: { detail: 'Member not found in this organization' },
    });
    expect(await patch('root', 'bob', 'owner')).toMatchObject({ status: 200, body: { role: 'owner' } });
    expect(await patch('bob', 'root', 'admin')).toMatchObject({ status: 200, body: { role: 'admin' } });
    expect(await patch('root', 'bob', 'member')).toMatchObject({ status: 403 });
    expect(await patch('bob', 'root', 'owner')).toMatchObject({ status: 200 });
  });

  it('keeps an owner when two owners demote each other at once', async () => {
    const both = await createOrg('Two Owners');
    await join(both, 'root', 'dave', 'owner');
    const [a, b] = await Promise.all([
      call(app, 'PATCH', `/api/organizations/${both}/members/dave`, { ...as('root'), body: { role: 'member' } }),
      call(app, 'PATCH', `/api/organizations/${both}/members/root`, { ...as('dave'), body: { role: 'member' } }),
    ]);
    // One may win; never both (the loser is refused as the last owner, or as a member by then).
    expect([a.status, b.status].filter((status) => status === 200).length).toBeLessThanOrEqual(1);
    expect([a.status, b.status].every((status) => [200, 400, 403].includes(status))).toBe(true);
    const owners = await app.rawCollection('org_members').countDocuments({ orgId: both, role: 'owner' });
    expect(owners).toBeGreaterThanOrEqual(1);
  });

  it('removes a member: they lose access, and act in their personal organisation again', async () => {
    const org2 = await createOrg('Removal');
    await join(org2, 'root', 'erin', 'member');
    await call(app, 'POST', `/api/organizations/${org2}/switch`, as('erin'));
    expect(await call(app, 'DELETE', `/api/organizations/${org2}/members/erin`, as('erin'))).toMatchObject({
      status: 403,
      body: { detail: 'Cannot remove yourself from an organization' },
    });
    expect(await call(app, 'DELETE', `/api/organizations/${org2}/members/erin`, as('root'))).toMatchObject({
      status: 200,
      body: { message: 'Member removed successfully' },
    });
    expect(await call(app, 'GET', `/api/organizations/${org2}/me`, as('erin'))).toMatchObject({ status: 404 });
    expect((await call(app, 'GET', '/api/organizations', as('erin'))).body.current_org_id).toBe('erin');
  });
});

describe('the organisation LLM settings', () => {
  it('stores the key sealed, never shows it, and lets only those allowed change it', async () => {
    const org = await createOrg('LLM Team');
    await join(org, 'root', 'carol', 'member');
    const patched = await call(app, 'PATCH', `/api/organizations/${org}/settings`, {
      ...as('root'),
      body: { agent_settings_diff: { llm: { model: 'openai/gpt-4o', base_url: 'https://llm.example/v1', api_key: ORG_LLM_KEY } } },
    });
    expect(patched).toMatchObject({
      status: 200,
      body: {
        agent_settings: { llm: { model: 'openai/gpt-4o', base_url: 'https://llm.example/v1', api_key: null } },
        llm_api_key_set: true,
      },
    });
    const read = await call(app, 'GET', `/api/organizations/${org}/settings`, as('carol'));
    expect(read.body).toMatchObject({ llm_api_key_set: true, agent_settings: { llm: { model: 'openai/gpt-4o' } } });
    for (const text of [patched.text, read.text]) expect(text).not.toContain(ORG_LLM_KEY);
    const stored = await app.rawCollection('organizations').findOne({ _id: org as never });
    expect(JSON.stringify(stored)).not.toContain(ORG_LLM_KEY);
    expect(await app.server.deps.services.organizations.llmDefaults(org)).toMatchObject({ apiKey: ORG_LLM_KEY });

    expect(
      await call(app, 'PATCH', `/api/organizations/${org}/settings`, { ...as('carol'), body: { llm_api_key: 'sk-mine' } }),
    ).toMatchObject({ status: 403, body: { detail: 'Requires edit_llm_settings permission' } });
    expect(await call(app, 'PATCH', `/api/organizations/${org}/settings`, { ...as('root'), body: { max_iterations: 3 } })).toMatchObject({
      status: 422,
    });
    const removed = await call(app, 'PATCH', `/api/organizations/${org}/settings`, { ...as('root'), body: { llm_api_key: null } });
    expect(removed.body.llm_api_key_set).toBe(false);
    // The personal organisation's are the user's own settings.
    expect(await call(app, 'PATCH', '/api/organizations/root/settings', { ...as('root'), body: { llm_api_key: 'x' } })).toMatchObject({
      status: 403,
    });
  });
});

describe('deleting an organisation', () => {
  it('is the owners’: memberships, invitations, secrets and current choices go with it', async () => {
    const org = await createOrg('Short Lived');
    await join(org, 'root', 'dave', 'admin');
    await call(app, 'POST', `/api/organizations/${org}/switch`, as('dave'));
    await call(app, 'POST', `/api/organizations/${org}/members/invite`, { ...as('root'), body: { emails: ['erin@example.com'] } });
    await call(app, 'POST', `/api/organizations/${org}/secrets`, { ...as('root'), body: { name: 'GONE_SOON', value: 'v' } });
    expect(await call(app, 'DELETE', `/api/organizations/${org}`, as('dave'))).toMatchObject({ status: 403 });
    expect(await call(app, 'DELETE', `/api/organizations/${org}`, as('root'))).toMatchObject({
      status: 200,
      body: { message: 'Organization deleted successfully', organization: { id: org, name: 'Short Lived' } },
    });
    expect(await call(app, 'GET', `/api/organizations/${org}/me`, as('dave'))).toMatchObject({ status: 404 });
    expect((await call(app, 'GET', '/api/organizations', as('dave'))).body.current_org_id).toBe('dave');
    expect(await app.rawCollection('org_members').countDocuments({ orgId: org })).toBe(0);
    expect(await app.rawCollection('org_invitations').countDocuments({ orgId: org })).toBe(0);
    expect(await app.rawCollection('org_secrets').countDocuments({ orgId: org })).toBe(0);
    expect(await call(app, 'DELETE', '/api/organizations/root', as('root'))).toMatchObject({ status: 403 });
  });
});

describe('one policy over tRPC', () => {
  const trpcAs = (user: string, orgId?: string) =>
    createTRPCClient<AppRouter>({
      links: [
        httpBatchLink({
          url: `${app.url}/trpc`,
          transformer,
          headers: () => ({ authorization: `Bearer ${keys[user]}`, ...(orgId ? { 'x-org-id': orgId } : {}) }),
        }),
      ],
    });

  it('answers and refuses as REST does, and the audit log names who changed whose role', async () => {
    const org = await createOrg('Typed');
    await join(org, 'root', 'carol', 'member');
    const carol = trpcAs('carol');
    expect(await carol.organizations.me.query({ org_id: org })).toMatchObject({ role: 'member' });
    await expect(carol.organizationMembers.invitations.query({ org_id: org })).rejects.toMatchObject({
      data: { code: 'FORBIDDEN' },
      message: 'Requires invite_user_to_organization permission',
    });
    await expect(trpcAs('erin').organizations.get.query({ org_id: org })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    await expect(trpcAs('carol', 'root').organizations.me.query({ org_id: org })).rejects.toMatchObject({ data: { code: 'BAD_REQUEST' } });

    const root = trpcAs('root');
    expect(await root.organizationMembers.update.mutate({ org_id: org, user_id: 'carol', role: 'admin' })).toMatchObject({ role: 'admin' });
    const log = await call(app, 'GET', `/api/audit/events/search?action=organizationMembers.update&user_id=root`, as('root'));
    expect(log.body.items[0]).toMatchObject({
      user_id: 'root',
      action: 'organizationMembers.update',
      outcome: 'ok',
      via: 'trpc',
      target: { org_id: org, user_id: 'carol', role: 'admin' },
    });
  });
});

describe('keys bound to an organisation', () => {
  it('act there only, whatever a request names; /api/keys/current says where a request acts', async () => {
    const org = await createOrg('Bound Keys');
    await join(org, 'root', 'dave', 'member');
    const minted = await call(app, 'POST', '/api/keys', { ...as('dave'), body: { name: 'ci', org_id: org } });
    expect(minted).toMatchObject({ status: 200, body: { org_id: org } });
    const bound = { headers: { authorization: `Bearer ${minted.body.key}` } };
    expect((await call(app, 'GET', '/api/keys/current', bound)).body).toMatchObject({ org_id: org, bound_org_id: org, user_id: 'dave' });
    expect(await call(app, 'GET', '/api/organizations/dave/me', bound)).toMatchObject({
      status: 403,
      body: { detail: 'API key is not authorized for this organization' },
    });
    // It mints keys bound where it is, never one that acts anywhere.
    const child = await call(app, 'POST', '/api/keys', { ...bound, body: { name: 'from-bound' } });
    expect(child).toMatchObject({ status: 200, body: { org_id: org } });
    expect(await call(app, 'POST', '/api/keys', { ...bound, body: { org_id: 'dave' } })).toMatchObject({ status: 403 });
    const elsewhere = { headers: { ...bound.headers, 'x-org-id': 'dave' } };
    expect(await call(app, 'GET', '/api/keys/current', elsewhere)).toMatchObject({ status: 403 });

    // An unbound key acts where X-Org-Id says, else in the current organisation.
    expect((await call(app, 'GET', '/api/keys/current', as('dave'))).body).toMatchObject({ org_id: 'dave', bound_org_id: null });
    expect((await call(app, 'GET', '/api/keys/current', as('dave', { 'x-org-id': org }))).body).toMatchObject({ org_id: org });
    // Binding to an organisation the user is not in: as if it did not exist.
    const notTheirs = await createOrg('Not Daves');
    expect(await call(app, 'POST', '/api/keys', { ...as('dave'), body: { org_id: notTheirs } })).toMatchObject({ status: 404 });
    // Removed from the organisation, the key bound to it is revoked (docs/organizations.md).
    await call(app, 'DELETE', `/api/organizations/${org}/members/dave`, as('root'));
    expect(await call(app, 'GET', '/api/keys/current', bound)).toMatchObject({ status: 401 });
    expect((await call(app, 'GET', '/api/keys/current', as('dave'))).status).toBe(200);
  });
});
