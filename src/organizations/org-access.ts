// Who a request acts as within organisations: the organisation a route names in its path, else
// the one the request's X-Org-Id header names (Agent Canvas and CloudClient send it on every
// call once an organisation is chosen), else the user's current one (POST …/switch), else their
// personal organisation (its id is the user's id, its only member the user, as owner).
import type { Models } from '../../models/index.js';
import { AppError } from '../errors.js';
import type { OrgRole } from './roles.js';

export interface OrgMembership {
  orgId: string;
  userId: string;
  role: OrgRole;
  personal: boolean;
}

/** How many organisations one user may belong to (their personal one aside): their list is read whole. */
export const MAX_ORGS_PER_USER = 100;

export const memberId = (orgId: string, userId: string) => `${orgId}:${userId}`;

export const orgNotFound = (orgId: string) =>
  new AppError('NOT_FOUND', `Organization with id "${orgId}" not found`, { reason: 'organization_not_found' });

export class OrgAccess {
  constructor(private readonly models: Pick<Models, 'OrgMember' | 'CurrentOrg'>) {}

  async membership(userId: string, orgId: string): Promise<OrgMembership | null> {
    if (orgId === userId) return { orgId, userId, role: 'owner', personal: true };
    const member = await this.models.OrgMember.findById(memberId(orgId, userId), { role: 1 }).lean();
    return member ? { orgId, userId, role: member.role as OrgRole, personal: false } : null;
  }

  /** The organisation a call acts in (see the file's head); another's or an unknown one answers as absent. */
  async effective(userId: string, scope: { pathOrgId?: string; headerOrgId?: string; boundOrgId?: string | null }): Promise<OrgMembership> {
    const { pathOrgId, headerOrgId, boundOrgId } = scope;
    // A key bound to an organisation acts there only (the Cloud's org-bound keys).
    if (boundOrgId) {
      if ((pathOrgId !== undefined && pathOrgId !== boundOrgId) || (headerOrgId !== undefined && headerOrgId !== boundOrgId)) {
        throw new AppError('FORBIDDEN', 'API key is not authorized for this organization', { reason: 'org_permission_denied' });
      }
      const membership = await this.membership(userId, boundOrgId);
      if (!membership) throw new AppError('FORBIDDEN', 'User is not a member of this organization', { reason: 'org_permission_denied' });
      return membership;
    }
    if (pathOrgId !== undefined) {
      if (headerOrgId !== undefined && headerOrgId !== pathOrgId) {
        throw new AppError(
          'BAD_REQUEST',
          `X-Org-Id header (${headerOrgId}) does not match the org in the request path (${pathOrgId}). Remove the header or set it to the same value.`,
          { reason: 'org_header_mismatch' },
        );
      }
      const membership = await this.membership(userId, pathOrgId);
      if (!membership) throw orgNotFound(pathOrgId);
      return membership;
    }
    if (headerOrgId !== undefined) {
      const membership = await this.membership(userId, headerOrgId);
      if (!membership) {
        throw new AppError('FORBIDDEN', 'User is not a member of the requested organization', { reason: 'org_permission_denied' });
      }
      return membership;
    }
    return (await this.membership(userId, await this.currentOrgId(userId))) ?? this.personal(userId);
  }

  personal(userId: string): OrgMembership {
    return { orgId: userId, userId, role: 'owner', personal: true };
  }

  async assertRoomFor(userId: string): Promise<void> {
    if ((await this.models.OrgMember.countDocuments({ userId })) >= MAX_ORGS_PER_USER) {
      throw new AppError('CONFLICT', `A user belongs to at most ${MAX_ORGS_PER_USER} organizations`, { reason: 'organization_limit' });
    }
  }

  async currentOrgId(userId: string): Promise<string> {
    return (await this.models.CurrentOrg.findById(userId, { orgId: 1 }).lean())?.orgId ?? userId;
  }

  async setCurrent(userId: string, orgId: string): Promise<void> {
    if (orgId === userId) await this.models.CurrentOrg.deleteOne({ _id: userId });
    else await this.models.CurrentOrg.updateOne({ _id: userId }, { $set: { orgId } }, { upsert: true });
  }
}
