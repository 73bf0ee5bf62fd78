// Organisations themselves (docs/organizations.md): the user's list, creating one (administrators;
// its creator is its first owner), reading, renaming, deleting, switching the current one, and
// its LLM defaults, which its members' conversations use and nobody reads back (the key is
// sealed at rest and only the start of a conversation opens it).
import { randomUUID } from 'node:crypto';
import type { Models, OrganizationRecord } from '../../models/index.js';
import type { CreateOrganizationInput, UpdateOrganizationInput, UpdateOrgSettingsInput } from '../../contract/organizations.schema.js';
import { pageOf, pageOffset } from '../../contract/common.schema.js';
import type { SecretBox } from '../crypto.js';
import { AppError, isDuplicateKeyError } from '../errors.js';
import { MAX_ORGS_PER_USER, memberId, orgNotFound, type OrgAccess, type OrgMembership } from './org-access.js';
import { assertPermitted, permissionsOf } from './roles.js';

export const orgLlmKeyContext = (orgId: string) => `org:${orgId}:llm_api_key`;

/** The organisation's LLM defaults with the key opened: for a conversation's start only. */
export interface OrgLlmDefaults {
  model: string | null;
  baseUrl: string | null;
  apiKey: string | null;
}

export interface OrganizationsDeps {
  models: Pick<Models, 'Organization' | 'OrgMember' | 'OrgInvitation' | 'CurrentOrg' | 'OrgSecret'>;
  box: SecretBox;
  access: OrgAccess;
  /** Server administrators (ADMIN_USERS, OIDC_ADMIN_GROUPS) create organisations. */
  isAdmin(userId: string): Promise<boolean>;
  emailOf(userId: string): Promise<string | null>;
  /** The personal organisation's LLM settings are its user's own. */
  personalLlm(userId: string): Promise<{ model: string | null; baseUrl: string | null; keySet: boolean }>;
  /** What a member held in the organisation ends (src/conversations/org-departure.ts). */
  onLeft?: (orgId: string, userId: string, how: 'removed' | 'deleted') => Promise<void>;
  now?: () => number;
}

export class OrganizationsService {
  private readonly now: () => number;

  constructor(private readonly deps: OrganizationsDeps) {
    this.now = deps.now ?? Date.now;
  }

  private get models() {
    return this.deps.models;
  }

  /** The personal organisation first, then the others by name. */
  async list(userId: string, pageId: string | null | undefined, limit: number) {
    const memberships = await this.models.OrgMember.find({ userId }, { orgId: 1 })
      .sort({ userId: 1, orgId: 1 })
      .limit(MAX_ORGS_PER_USER)
      .lean();
    const orgs = memberships.length ? await this.models.Organization.find({ _id: { $in: memberships.map((m) => m.orgId) } }).lean() : [];
    orgs.sort((a, b) => a.name.localeCompare(b.name));
    const all = [personalView(userId), ...orgs.map(orgView)];
    const offset = pageOffset(pageId);
    return {
      ...pageOf(all.slice(offset, offset + limit), offset, limit, all.length),
      current_org_id: await this.deps.access.currentOrgId(userId),
    };
  }

  async create(userId: string, input: CreateOrganizationInput) {
    if (!(await this.deps.isAdmin(userId))) {
      throw new AppError('FORBIDDEN', 'Only administrators create organizations', { reason: 'not_an_admin' });
    }
    await this.deps.access.assertRoomFor(userId);
    const record = {
      _id: randomUUID(),
      name: input.name,
      nameKey: input.name.toLowerCase(),
      contactName: input.contact_name ?? '',
      contactEmail: input.contact_email ?? (await this.deps.emailOf(userId)) ?? '',
      createdBy: userId,
      createdAt: new Date(this.now()),
      llm: { model: null, baseUrl: null, apiKey: null },
    };
    try {
      await this.models.Organization.create(record);
    } catch (error) {
      throw isDuplicateKeyError(error) ? nameTaken(input.name) : error;
    }
    try {
      await this.models.OrgMember.create({
        _id: memberId(record._id, userId),
        orgId: record._id,
        userId,
        email: await this.deps.emailOf(userId),
        role: 'owner',
        joinedAt: new Date(this.now()),
      });
    } catch (error) {
      // Never an organisation without its owner.
      await this.models.Organization.deleteOne({ _id: record._id });
      throw error;
    }
    return orgView(record);
  }

  async get(org: OrgMembership) {
    return org.personal ? personalView(org.userId) : orgView(await this.record(org.orgId));
  }

  async update(org: OrgMembership, input: UpdateOrganizationInput) {
    assertTeam(org);
    const set: Record<string, string> = {};
    if (input.name != null) {
      assertPermitted(org.role, 'change_organization_name');
      set.name = input.name;
      set.nameKey = input.name.toLowerCase();
    }
    if (input.contact_name != null) set.contactName = input.contact_name;
    if (input.contact_email != null) set.contactEmail = input.contact_email;
    if (Object.keys(set).length > 0) {
      try {
        await this.models.Organization.updateOne({ _id: org.orgId }, { $set: set });
      } catch (error) {
        throw isDuplicateKeyError(error) ? nameTaken(input.name ?? '') : error;
      }
    }
    return orgView(await this.record(org.orgId));
  }

  /** The organisation goes first (nobody reaches it from then on), then what hangs off it. */
  async delete(org: OrgMembership) {
    assertTeam(org);
    const record = await this.record(org.orgId);
    const members = await this.models.OrgMember.find({ orgId: org.orgId }, { userId: 1 }).sort({ orgId: 1, userId: 1 }).lean();
    await this.models.Organization.deleteOne({ _id: org.orgId });
    await this.forget(org.orgId);
    for (const member of members) await this.deps.onLeft?.(org.orgId, member.userId, 'deleted');
    const { id, name, contact_name, contact_email } = orgView(record);
    return { message: 'Organization deleted successfully', organization: { id, name, contact_name, contact_email } };
  }

  /** Memberships, invitations, secrets and current choices of an organisation that is gone. */
  async forget(orgId: string): Promise<void> {
    await this.models.OrgSecret.deleteMany({ orgId });
    await this.models.OrgInvitation.deleteMany({ orgId, status: { $in: ['pending', 'accepted', 'revoked'] } });
    await this.models.CurrentOrg.deleteMany({ orgId });
    await this.models.OrgMember.deleteMany({ orgId });
  }

  async switchTo(org: OrgMembership) {
    await this.deps.access.setCurrent(org.userId, org.orgId);
    return this.get(org);
  }

  async me(org: OrgMembership) {
    return {
      org_id: org.orgId,
      user_id: org.userId,
      email: await this.deps.emailOf(org.userId),
      role: org.role,
      permissions: permissionsOf(org.role),
      llm_api_key: null,
      llm_api_key_for_byor: null,
      agent_settings_diff: {},
      conversation_settings_diff: {},
      status: 'active' as const,
    };
  }

  async settings(org: OrgMembership) {
    const llm = org.personal ? await this.deps.personalLlm(org.userId) : llmView((await this.record(org.orgId)).llm);
    return {
      agent_settings: { llm: { model: llm.model, base_url: llm.baseUrl, api_key: null } },
      conversation_settings: {},
      llm_api_key_set: llm.keySet,
      search_api_key: null,
    };
  }

  async updateSettings(org: OrgMembership, input: UpdateOrgSettingsInput) {
    if (org.personal) {
      throw new AppError('FORBIDDEN', "The personal organization's settings are the user's own: change them with /api/v1/settings", {
        reason: 'org_personal',
      });
    }
    const llm = input.agent_settings_diff?.llm ?? {};
    const set: Record<string, string | null> = {};
    if (llm.model !== undefined) set['llm.model'] = llm.model;
    if (llm.base_url !== undefined) set['llm.baseUrl'] = llm.base_url;
    const key = input.llm_api_key !== undefined ? input.llm_api_key : llm.api_key;
    if (key !== undefined) set['llm.apiKey'] = key === null ? null : this.deps.box.encrypt(key, orgLlmKeyContext(org.orgId));
    if (Object.keys(set).length > 0) await this.models.Organization.updateOne({ _id: org.orgId }, { $set: set });
    return this.settings(org);
  }

  /** What a team organisation's LLM defaults say (never the key), or null when it has none. */
  async llmView(orgId: string): Promise<{ model: string | null; baseUrl: string | null; keySet: boolean } | null> {
    const llm = await this.configuredLlm(orgId);
    return llm ? llmView(llm) : null;
  }

  /** A team organisation's monthly cap (null: none, or no such organisation). */
  async monthlyBudget(orgId: string): Promise<number | null> {
    return (await this.models.Organization.findById(orgId, { monthlyBudget: 1 }).lean())?.monthlyBudget ?? null;
  }

  async setMonthlyBudget(org: OrgMembership, limit: number | null): Promise<void> {
    assertTeam(org);
    await this.models.Organization.updateOne({ _id: org.orgId }, { $set: { monthlyBudget: limit } });
  }

  /** A team organisation's LLM defaults with the key opened, or null (personal, gone, or none set). */
  async llmDefaults(orgId: string): Promise<OrgLlmDefaults | null> {
    const llm = await this.configuredLlm(orgId);
    if (!llm) return null;
    return {
      model: llm.model ?? null,
      baseUrl: llm.baseUrl ?? null,
      apiKey: llm.apiKey ? this.deps.box.decrypt(llm.apiKey, orgLlmKeyContext(orgId)) : null,
    };
  }

  /** The organisation's stored LLM defaults, when it has any (a model or a key). */
  private async configuredLlm(orgId: string): Promise<NonNullable<OrganizationRecord['llm']> | null> {
    const llm = (await this.models.Organization.findById(orgId, { llm: 1 }).lean())?.llm;
    return llm && (llm.model || llm.apiKey) ? llm : null;
  }

  private async record(orgId: string): Promise<OrganizationRecord & { _id: string }> {
    const record = await this.models.Organization.findById(orgId).lean();
    if (!record) throw orgNotFound(orgId);
    return record as OrganizationRecord & { _id: string };
  }
}

function assertTeam(org: OrgMembership): void {
  if (org.personal) throw new AppError('FORBIDDEN', 'The personal organization cannot be changed or deleted', { reason: 'org_personal' });
}

const nameTaken = (name: string) =>
  new AppError('CONFLICT', `Organization with name "${name}" already exists`, { reason: 'organization_name_taken' });

const personalView = (userId: string) => ({
  id: userId,
  name: userId,
  contact_name: '',
  contact_email: '',
  is_personal: true,
  created_at: null,
});

function orgView(record: Pick<OrganizationRecord, 'name' | 'contactName' | 'contactEmail' | 'createdAt'> & { _id: string }) {
  return {
    id: record._id,
    name: record.name,
    contact_name: record.contactName ?? '',
    contact_email: record.contactEmail ?? '',
    is_personal: false,
    created_at: record.createdAt.toISOString(),
  };
}

const llmView = (llm: OrganizationRecord['llm'] | undefined) => ({
  model: llm?.model ?? null,
  baseUrl: llm?.baseUrl ?? null,
  keySet: Boolean(llm?.apiKey),
});
