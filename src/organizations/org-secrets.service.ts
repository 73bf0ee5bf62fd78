// A team organisation's secrets (docs/organizations.md): set by its owners and admins, listed by
// name to every member, never read back by anyone; the conversations started in the
// organisation get them (a member's own secret of the same name, and the start request's,
// win). Values are sealed at rest and re-encrypted by `cli encryption rotate`.
import type { Models } from '../../models/index.js';
import type { CreateOrgSecretInput, UpdateOrgSecretInput } from '../../contract/organizations.schema.js';
import type { SecretBox } from '../crypto.js';
import { AppError, isDuplicateKeyError } from '../errors.js';
import type { OrgMembership } from './org-access.js';

/** Secrets one organisation may hold (its list is read whole, as its conversations get them all). */
export const MAX_ORG_SECRETS = 100;

export const orgSecretContext = (orgId: string) => `org-secret:${orgId}`;
const secretId = (orgId: string, name: string) => `${orgId}:${name}`;

export class OrgSecretsService {
  constructor(
    private readonly models: Pick<Models, 'OrgSecret'>,
    private readonly box: SecretBox,
    private readonly now: () => number = Date.now,
  ) {}

  async list(org: OrgMembership) {
    if (org.personal) return { secrets: [] };
    const docs = await this.models.OrgSecret.find({ orgId: org.orgId }, { name: 1, description: 1 })
      .sort({ orgId: 1, createdAt: 1, _id: 1 })
      .limit(MAX_ORG_SECRETS)
      .lean();
    return { secrets: docs.map((d) => ({ name: d.name, description: d.description ?? '' })) };
  }

  async create(org: OrgMembership, input: CreateOrgSecretInput) {
    assertTeam(org);
    if ((await this.models.OrgSecret.countDocuments({ orgId: org.orgId })) >= MAX_ORG_SECRETS) {
      throw new AppError('CONFLICT', `An organization holds at most ${MAX_ORG_SECRETS} secrets`, { reason: 'secret_limit' });
    }
    try {
      await this.models.OrgSecret.create({
        _id: secretId(org.orgId, input.name),
        orgId: org.orgId,
        name: input.name,
        value: this.box.encrypt(input.value, orgSecretContext(org.orgId)),
        description: input.description ?? '',
        createdAt: new Date(this.now()),
      });
    } catch (error) {
      if (isDuplicateKeyError(error)) throw new AppError('CONFLICT', `Secret ${input.name} already exists`, { reason: 'secret_exists' });
      throw error;
    }
    return { name: input.name, description: input.description ?? '' };
  }

  async update(org: OrgMembership, input: UpdateOrgSecretInput) {
    assertTeam(org);
    const set: Record<string, string> = {};
    if (input.value !== undefined) set.value = this.box.encrypt(input.value, orgSecretContext(org.orgId));
    if (input.description !== undefined) set.description = input.description ?? '';
    const found = await this.models.OrgSecret.findOneAndUpdate(
      { _id: secretId(org.orgId, input.name) },
      { $set: set },
      { new: true },
    ).lean();
    if (!found) throw notFound(input.name);
    return { name: found.name, description: found.description ?? '' };
  }

  async delete(org: OrgMembership, name: string) {
    assertTeam(org);
    const { deletedCount } = await this.models.OrgSecret.deleteOne({ _id: secretId(org.orgId, name) });
    if (deletedCount === 0) throw notFound(name);
    return { message: 'Secret deleted' };
  }

  /** The values, for a conversation's start in the organisation only. */
  async resolve(orgId: string): Promise<{ name: string; value: string; description: string }[]> {
    const docs = await this.models.OrgSecret.find({ orgId }).sort({ orgId: 1, createdAt: 1, _id: 1 }).limit(MAX_ORG_SECRETS).lean();
    return docs.map((d) => ({ name: d.name, value: this.box.decrypt(d.value, orgSecretContext(orgId)), description: d.description ?? '' }));
  }
}

function assertTeam(org: OrgMembership): void {
  if (org.personal) {
    throw new AppError('FORBIDDEN', "The personal organization's secrets are the user's own: /api/v1/secrets", { reason: 'org_personal' });
  }
}

const notFound = (name: string) => new AppError('NOT_FOUND', `Secret ${name} not found`, { reason: 'secret_not_found' });
