// An organisation's members (docs/organizations.md): the page and count of members, one member,
// changing a member's role and removing one, by the rules of roles.ts. An organisation always keeps an
// owner: a change that leaves none is undone and refused (checked after the write, so two
// owners demoting each other at once, on any replicas, cannot both succeed).
import type { Models, OrgMemberRecord } from '../../models/index.js';
import type { MembersInput } from '../../contract/organizations.schema.js';
import { pageOffset } from '../../contract/common.schema.js';
import { escapeRegex } from '../db/regex.js';
import { AppError } from '../errors.js';
import { memberId, type OrgAccess, type OrgMembership } from './org-access.js';
import { assertMayChangeMember, type OrgRole } from './roles.js';

// The Cloud's role rows (id, rank): lower rank, more senior.
const ROLE_ROWS: Record<OrgRole, { id: number; rank: number }> = {
  owner: { id: 1, rank: 10 },
  admin: { id: 2, rank: 20 },
  member: { id: 3, rank: 1000 },
};

export class MembersService {
  constructor(
    private readonly models: Pick<Models, 'OrgMember'>,
    private readonly access: OrgAccess,
    private readonly emailOf: (userId: string) => Promise<string | null>,
    /** What the member held in the organisation ends (src/conversations/org-departure.ts). */
    private readonly onLeft: (orgId: string, userId: string, how: 'removed' | 'deleted') => Promise<void> = async () => {},
  ) {}

  async list(org: OrgMembership, input: MembersInput) {
    const offset = pageOffset(input.page_id);
    const records = org.personal
      ? [await this.personalMember(org.userId)]
      : await this.models.OrgMember.find(this.filter(org.orgId, input.email))
          .sort({ orgId: 1, userId: 1 })
          .skip(offset)
          .limit(input.limit)
          .lean();
    const items = (org.personal ? records.slice(offset, offset + input.limit) : records).map(memberView);
    return { items, current_page: Math.floor(offset / input.limit) + 1, per_page: input.limit };
  }

  async count(org: OrgMembership, email: string | undefined): Promise<number> {
    if (org.personal) return email === undefined || (await this.personalMember(org.userId)).email?.includes(email.toLowerCase()) ? 1 : 0;
    return this.models.OrgMember.countDocuments(this.filter(org.orgId, email));
  }

  /** One member by user id; a personal organisation's only member is its user. */
  async one(org: OrgMembership, userId: string) {
    if (org.personal) {
      if (userId === org.userId) return memberView(await this.personalMember(userId));
      throw memberNotFound();
    }
    const record = await this.models.OrgMember.findById(memberId(org.orgId, userId)).lean();
    if (!record) throw memberNotFound();
    return memberView(record);
  }

  async update(actor: OrgMembership, userId: string, role: OrgRole | null | undefined) {
    const target = await this.target(actor, userId);
    if (!role || role === target.role) return memberView(target);
    assertMayChangeMember(actor, { userId, role: target.role as OrgRole }, role);
    await this.models.OrgMember.updateOne({ _id: target._id }, { $set: { role } });
    if (target.role === 'owner' && !(await this.hasOwner(actor.orgId))) {
      await this.models.OrgMember.updateOne({ _id: target._id }, { $set: { role: 'owner' } });
      throw lastOwner('demote');
    }
    return memberView({ ...target, role });
  }

  async remove(actor: OrgMembership, userId: string) {
    const target = await this.target(actor, userId);
    assertMayChangeMember(actor, { userId, role: target.role as OrgRole }, null);
    await this.models.OrgMember.deleteOne({ _id: target._id });
    if (target.role === 'owner' && !(await this.hasOwner(actor.orgId))) {
      await this.models.OrgMember.create(target);
      throw lastOwner('remove');
    }
    // Whoever acted in it acts in their personal organisation from now on.
    if ((await this.access.currentOrgId(userId)) === actor.orgId) await this.access.setCurrent(userId, userId);
    await this.onLeft(actor.orgId, userId, 'removed');
    return { message: 'Member removed successfully' };
  }

  private async target(actor: OrgMembership, userId: string): Promise<OrgMemberRecord & { _id: string }> {
    if (actor.personal) {
      throw new AppError('FORBIDDEN', 'The personal organization has no other members', { reason: 'org_personal' });
    }
    const target = await this.models.OrgMember.findById(memberId(actor.orgId, userId)).lean();
    if (!target) throw memberNotFound();
    return target as OrgMemberRecord & { _id: string };
  }

  private async hasOwner(orgId: string): Promise<boolean> {
    return (await this.models.OrgMember.findOne({ orgId, role: 'owner' }, { _id: 1 }).lean()) !== null;
  }

  private filter(orgId: string, email: string | undefined) {
    return email === undefined ? { orgId } : { orgId, email: { $regex: escapeRegex(email.toLowerCase()) } };
  }

  private async personalMember(userId: string) {
    return { userId, email: await this.emailOf(userId), role: 'owner' as const };
  }
}

const memberNotFound = () => new AppError('NOT_FOUND', 'Member not found in this organization', { reason: 'org_member_not_found' });

const lastOwner = (what: 'demote' | 'remove') =>
  new AppError('BAD_REQUEST', `Cannot ${what} the last owner of an organization`, { reason: 'org_last_owner' });

function memberView(record: Pick<OrgMemberRecord, 'userId' | 'email' | 'role'>) {
  const role = record.role;
  return {
    user_id: record.userId,
    email: record.email ?? null,
    role_id: ROLE_ROWS[role].id,
    role,
    role_rank: ROLE_ROWS[role].rank,
    status: 'active' as const,
  };
}
