// Invitations to an organisation (docs/organizations.md): by email, with a role, valid for seven
// days. The link (a token) is shown once, to the inviter, who passes it on: no mail is sent from
// here (email_delivery_configured: false). Only the token's hash is stored. The invited user
// accepts with the token, or simply signs in through the identity provider with that email: a
// sign-in accepts what waits for its address.
import { randomUUID } from 'node:crypto';
import type { Models, OrgInvitationRecord } from '../../models/index.js';
import type { InviteInput } from '../../contract/organizations.schema.js';
import { randomBase62, sha256 } from '../crypto.js';
import { AppError, isDuplicateKeyError } from '../errors.js';
import { MAX_ORGS_PER_USER, memberId, type OrgAccess, type OrgMembership } from './org-access.js';
import { assertMayInvite, type OrgRole } from './roles.js';

export const INVITATION_TTL_MS = 7 * 24 * 3600_000;
/** The link's page (src/http/web/invitation-page.ts): it shows the invitation and joins on a click. */
export const INVITATION_PAGE = '/invitations/accept';
/** Pending invitations one organisation may hold (the list is read whole). */
export const MAX_PENDING_INVITATIONS = 500;

const tokenHash = (token: string) => sha256(token).toString('hex');

export interface InvitationsDeps {
  models: Pick<Models, 'Organization' | 'OrgMember' | 'OrgInvitation'>;
  access: OrgAccess;
  emailOf(userId: string): Promise<string | null>;
  now?: () => number;
}

export class InvitationsService {
  private readonly now: () => number;

  constructor(private readonly deps: InvitationsDeps) {
    this.now = deps.now ?? Date.now;
  }

  private get models() {
    return this.deps.models;
  }

  /** baseUrl: where browsers reach this service (PUBLIC_URL, else the request's origin); none, no link. */
  async invite(actor: OrgMembership, input: InviteInput, baseUrl: string | null) {
    if (actor.personal) {
      throw new AppError('FORBIDDEN', 'Cannot invite users to a personal workspace', { reason: 'org_personal' });
    }
    assertMayInvite(actor.role, input.role);
    const pending = await this.models.OrgInvitation.countDocuments({ orgId: actor.orgId, status: 'pending' });
    if (pending + input.emails.length > MAX_PENDING_INVITATIONS) {
      throw new AppError('CONFLICT', `An organization holds at most ${MAX_PENDING_INVITATIONS} pending invitations`, {
        reason: 'invitation_limit',
      });
    }
    const inviterEmail = await this.deps.emailOf(actor.userId);
    const successful = [];
    const failed = [];
    for (const email of [...new Set(input.emails.map((e) => e.toLowerCase()))]) {
      if (await this.models.OrgMember.exists({ orgId: actor.orgId, email })) {
        failed.push({ email, error: 'User is already a member of this organization' });
        continue;
      }
      const token = `inv-${randomBase62(48)}`;
      const at = this.now();
      const record = {
        _id: randomUUID(),
        orgId: actor.orgId,
        email,
        role: input.role,
        tokenHash: tokenHash(token),
        inviterId: actor.userId,
        status: 'pending' as const,
        createdAt: new Date(at),
        expiresAt: new Date(at + INVITATION_TTL_MS),
      };
      await this.models.OrgInvitation.create(record);
      const url = baseUrl ? `${baseUrl}${INVITATION_PAGE}?token=${token}` : null;
      successful.push({ ...this.view(record, inviterEmail), invite_url: url });
    }
    return { successful, failed, email_delivery_configured: false };
  }

  async pending(org: OrgMembership) {
    const records = await this.models.OrgInvitation.find({ orgId: org.orgId, status: 'pending' })
      .sort({ orgId: 1, status: 1, createdAt: -1 })
      .limit(MAX_PENDING_INVITATIONS)
      .lean();
    // Each inviter's email read once, however many of the invitations are theirs.
    const inviters = [...new Set(records.map((r) => r.inviterId))];
    const emails = new Map(await Promise.all(inviters.map(async (id) => [id, await this.deps.emailOf(id)] as const)));
    const items = records.map((r) => this.view(r, emails.get(r.inviterId) ?? null));
    return { items, email_delivery_configured: false, auto_add_enabled: false };
  }

  async revoke(org: OrgMembership, invitationId: string): Promise<void> {
    const record = await this.models.OrgInvitation.findById(invitationId).lean();
    if (!record || record.orgId !== org.orgId) {
      throw new AppError('NOT_FOUND', 'Invitation not found', { reason: 'invitation_not_found' });
    }
    const revoked = await this.models.OrgInvitation.updateOne({ _id: invitationId, status: 'pending' }, { $set: { status: 'revoked' } });
    if (revoked.modifiedCount === 0) {
      throw new AppError('CONFLICT', 'Only pending invitations can be revoked', { reason: 'invitation_not_pending' });
    }
  }

  /** What an invitation link offers, for its page: nothing is accepted here. */
  async peek(token: string): Promise<{ orgName: string; role: OrgRole; email: string; state: 'pending' | 'expired' } | null> {
    const record = await this.models.OrgInvitation.findOne({ tokenHash: tokenHash(token) }).lean();
    if (!record || record.status !== 'pending') return null;
    const org = await this.models.Organization.findById(record.orgId, { name: 1 }).lean();
    if (!org) return null;
    const state = record.expiresAt.getTime() <= this.now() ? 'expired' : 'pending';
    return { orgName: org.name, role: record.role, email: record.email, state };
  }

  /** The Cloud's answers are machine codes in `detail`: invitation_invalid, invitation_expired, email_mismatch, already_member. */
  async accept(userId: string, token: string) {
    const record = await this.models.OrgInvitation.findOne({ tokenHash: tokenHash(token) }).lean();
    if (!record || record.status !== 'pending') throw invitationError('BAD_REQUEST', 'invitation_invalid');
    if (record.expiresAt.getTime() <= this.now()) throw invitationError('BAD_REQUEST', 'invitation_expired');
    const email = await this.deps.emailOf(userId);
    if (!email || email !== record.email) throw invitationError('FORBIDDEN', 'email_mismatch');
    const org = await this.join(userId, email, record);
    return { success: true as const, org_id: record.orgId, org_name: org.name, role: record.role as OrgRole };
  }

  /**
   * At an identity-provider sign-in: every pending, unexpired invitation to the user's verified
   * email is accepted; one who still acts in their personal organisation moves to the first
   * organisation joined. Returns the organisations joined.
   */
  async acceptPendingFor(userId: string, email: string): Promise<string[]> {
    const waiting = await this.models.OrgInvitation.find({ email: email.toLowerCase(), status: 'pending' }).limit(MAX_ORGS_PER_USER).lean();
    const joined: string[] = [];
    for (const record of waiting) {
      if (record.expiresAt.getTime() <= this.now()) continue;
      try {
        await this.join(userId, email.toLowerCase(), record);
        joined.push(record.orgId);
      } catch (error) {
        if (!(error instanceof AppError)) throw error; // a member already, a gone organisation: that invitation only
      }
    }
    if (joined.length > 0 && (await this.deps.access.currentOrgId(userId)) === userId)
      await this.deps.access.setCurrent(userId, joined[0]!);
    return joined;
  }

  /** The invitation is used up first (one acceptance wins), then the membership written. */
  private async join(userId: string, email: string, record: OrgInvitationRecord & { _id: string }) {
    const org = await this.models.Organization.findById(record.orgId, { name: 1 }).lean();
    if (!org) throw invitationError('BAD_REQUEST', 'invitation_invalid');
    if (await this.models.OrgMember.exists({ _id: memberId(record.orgId, userId) })) throw invitationError('CONFLICT', 'already_member');
    await this.deps.access.assertRoomFor(userId);
    const used = await this.models.OrgInvitation.updateOne(
      { _id: record._id, status: 'pending' },
      { $set: { status: 'accepted', acceptedBy: userId, acceptedAt: new Date(this.now()) } },
    );
    if (used.modifiedCount === 0) throw invitationError('BAD_REQUEST', 'invitation_invalid');
    try {
      await this.models.OrgMember.create({
        _id: memberId(record.orgId, userId),
        orgId: record.orgId,
        userId,
        email,
        role: record.role,
        joinedAt: new Date(this.now()),
      });
    } catch (error) {
      if (!isDuplicateKeyError(error)) {
        await this.models.OrgInvitation.updateOne({ _id: record._id }, { $set: { status: 'pending', acceptedBy: null, acceptedAt: null } });
      }
      throw isDuplicateKeyError(error) ? invitationError('CONFLICT', 'already_member') : error;
    }
    return org;
  }

  private view(
    record: Pick<OrgInvitationRecord, 'email' | 'role' | 'status' | 'createdAt' | 'expiresAt'> & { _id: string },
    inviterEmail: string | null,
  ) {
    const expired = record.status === 'pending' && record.expiresAt.getTime() <= this.now();
    return {
      id: record._id,
      email: record.email,
      role: record.role as OrgRole,
      status: (expired ? 'expired' : record.status) as 'pending' | 'accepted' | 'revoked' | 'expired',
      created_at: record.createdAt.toISOString(),
      expires_at: record.expiresAt.toISOString(),
      inviter_email: inviterEmail,
      invite_url: null,
    };
  }
}

type InvitationFailure = 'invitation_invalid' | 'invitation_expired' | 'email_mismatch' | 'already_member';

/** The reason is the message too: the Cloud's clients read these codes from `detail`. */
const invitationError = (code: 'BAD_REQUEST' | 'FORBIDDEN' | 'CONFLICT', failure: InvitationFailure) =>
  new AppError(code, failure, { reason: failure });
