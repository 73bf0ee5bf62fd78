// An organisation's members and invitations, in OpenHands Cloud's shapes (docs/organizations.md):
// the members page and count, one member, changing a role and removing a member (roles.ts decides who may
// touch whom), inviting by email (the link shown once), the pending invitations, revoking one,
// and accepting one with its token.
import { authedProcedure, orgProcedure, ORG_SCOPE_ERRORS } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { z } from 'zod';
import {
  AcceptedInvitationSchema,
  AcceptInvitationInputSchema,
  InvitationIdInputSchema,
  InvitationsSchema,
  InvitedSchema,
  InviteInputSchema,
  MemberInputSchema,
  MembersCountInputSchema,
  MembersInputSchema,
  MessageSchema,
  OrgIdInputSchema,
  OrgMemberSchema,
  OrgMembersPageSchema,
  UpdateMemberInputSchema,
} from '../contract/organizations.schema.js';

const tags = ['organizations'];
const inOrg = ORG_SCOPE_ERRORS;
const base = '/api/organizations/{org_id}/members';

export const organizationMembersRouter = router({
  list: orgProcedure
    .meta({
      errors: [...inOrg],
      orgPermission: 'view_org_settings',
      openapi: { method: 'GET', path: base, tags, summary: 'Its members (page_id: an offset)' },
    })
    .input(MembersInputSchema)
    .output(OrgMembersPageSchema)
    .query(({ ctx, input }) => ctx.services.orgMembers.list(ctx.org, input)),

  count: orgProcedure
    .meta({
      errors: [...inOrg],
      orgPermission: 'view_org_settings',
      openapi: { method: 'GET', path: `${base}/count`, tags, summary: 'How many members (a bare number)' },
    })
    .input(MembersCountInputSchema)
    .output(z.number().int())
    .query(({ ctx, input }) => ctx.services.orgMembers.count(ctx.org, input.email)),

  update: orgProcedure
    .meta({
      errors: [...inOrg, 'org_personal', 'org_member_not_found', 'org_last_owner'],
      openapi: { method: 'PATCH', path: `${base}/{user_id}`, tags, summary: "Change a member's role" },
    })
    .input(UpdateMemberInputSchema)
    .output(OrgMemberSchema)
    .mutation(({ ctx, input }) => ctx.services.orgMembers.update(ctx.org, input.user_id, input.role)),

  remove: orgProcedure
    .meta({
      errors: [...inOrg, 'org_personal', 'org_member_not_found', 'org_last_owner'],
      openapi: { method: 'DELETE', path: `${base}/{user_id}`, tags, summary: 'Remove a member' },
    })
    .input(MemberInputSchema)
    .output(MessageSchema)
    .mutation(({ ctx, input }) => ctx.services.orgMembers.remove(ctx.org, input.user_id)),

  invite: orgProcedure
    .meta({
      errors: [...inOrg, 'org_personal', 'invitation_limit'],
      successStatus: 201,
      openapi: { method: 'POST', path: `${base}/invite`, tags, summary: 'Invite by email with a role; each link is shown once' },
    })
    .input(InviteInputSchema)
    .output(InvitedSchema)
    .mutation(({ ctx, input }) =>
      ctx.services.orgInvitations.invite(ctx.org, input, ctx.deps.config.publicUrl ?? ctx.requester?.origin ?? null),
    ),

  invitations: orgProcedure
    .meta({
      errors: [...inOrg],
      orgPermission: 'invite_user_to_organization',
      openapi: { method: 'GET', path: `${base}/invite`, tags, summary: 'Its pending invitations, newest first' },
    })
    .input(OrgIdInputSchema)
    .output(InvitationsSchema)
    .query(({ ctx }) => ctx.services.orgInvitations.pending(ctx.org)),

  revokeInvitation: orgProcedure
    .meta({
      errors: [...inOrg, 'invitation_not_found', 'invitation_not_pending'],
      orgPermission: 'invite_user_to_organization',
      successStatus: 204,
      openapi: { method: 'DELETE', path: `${base}/invite/{invitation_id}`, tags, summary: 'Revoke a pending invitation' },
    })
    .input(InvitationIdInputSchema)
    .output(z.void())
    .mutation(({ ctx, input }) => ctx.services.orgInvitations.revoke(ctx.org, input.invitation_id)),

  acceptInvitation: authedProcedure
    .meta({
      errors: ['invitation_invalid', 'invitation_expired', 'email_mismatch', 'already_member', 'organization_limit'],
      openapi: { method: 'POST', path: '/api/organizations/members/invite/accept', tags, summary: 'Join with an invitation token' },
    })
    .input(AcceptInvitationInputSchema)
    .output(AcceptedInvitationSchema)
    .mutation(({ ctx, input }) => ctx.services.orgInvitations.accept(ctx.user.id, input.token)),

  // Last: its path would otherwise take .../members/count and .../members/invite (first match wins).
  member: orgProcedure
    .meta({
      errors: [...inOrg, 'org_member_not_found'],
      orgPermission: 'view_org_settings',
      openapi: {
        method: 'GET',
        path: `${base}/{user_id}`,
        tags,
        summary: 'One member, by user id or the UUID the automation service knows them by (Canvas shows who an automation runs as)',
      },
    })
    .input(MemberInputSchema)
    .output(OrgMemberSchema)
    .query(async ({ ctx, input }) =>
      ctx.services.orgMembers.one(ctx.org, (await ctx.services.automations.userOf(input.user_id)) ?? input.user_id),
    ),
});
