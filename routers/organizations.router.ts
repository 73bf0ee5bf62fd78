// Organisations in OpenHands Cloud's shapes (docs/organizations.md): the user's list (their
// personal organisation, whose id is their user id, and the teams they belong to), creating one,
// reading, changing and deleting it, switching the current one, the caller's membership (what
// Agent Canvas reads to show its controls) and the organisation's LLM defaults. Members and
// invitations: organization-members.router.ts. Each route's `orgPermission` is checked against
// the caller's role by orgProcedure, one policy for REST and tRPC (src/organizations/roles.ts).
import { authedProcedure, orgProcedure, ORG_SCOPE_ERRORS } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import {
  CreateOrganizationInputSchema,
  DeletedOrganizationSchema,
  OrganizationMeSchema,
  OrganizationSchema,
  OrganizationsInputSchema,
  OrganizationsPageSchema,
  OrgBudgetSchema,
  OrgBudgetUpdateInputSchema,
  OrgConversationsInputSchema,
  OrgConversationsPageSchema,
  OrgIdInputSchema,
  OrgSettingsSchema,
  ProviderConnectionsSchema,
  UpdateOrganizationInputSchema,
  UpdateOrgSettingsInputSchema,
} from '../contract/organizations.schema.js';
import { llmProfileProcedures } from './llm-profiles.procedures.js';

const tags = ['organizations'];
const inOrg = ORG_SCOPE_ERRORS;

export const organizationsRouter = router({
  list: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/organizations', tags, summary: "The user's organisations, the personal one first" } })
    .input(OrganizationsInputSchema)
    .output(OrganizationsPageSchema)
    .query(({ ctx, input }) => ctx.services.organizations.list(ctx.user.id, input.page_id, input.limit)),

  create: authedProcedure
    .meta({
      errors: ['not_an_admin', 'organization_name_taken', 'organization_limit'],
      successStatus: 201,
      openapi: {
        method: 'POST',
        path: '/api/organizations',
        tags,
        summary: 'Create an organisation (administrators); its creator is its owner',
      },
    })
    .input(CreateOrganizationInputSchema)
    .output(OrganizationSchema)
    .mutation(({ ctx, input }) => ctx.services.organizations.create(ctx.user.id, input)),

  get: orgProcedure
    .meta({
      errors: [...inOrg],
      orgPermission: 'view_org_settings',
      openapi: { method: 'GET', path: '/api/organizations/{org_id}', tags, summary: 'The organisation' },
    })
    .input(OrgIdInputSchema)
    .output(OrganizationSchema)
    .query(({ ctx }) => ctx.services.organizations.get(ctx.org)),

  update: orgProcedure
    .meta({
      errors: [...inOrg, 'org_personal', 'organization_name_taken'],
      orgPermission: 'edit_org_settings',
      openapi: { method: 'PATCH', path: '/api/organizations/{org_id}', tags, summary: 'Rename it (owners) or change its contact' },
    })
    .input(UpdateOrganizationInputSchema)
    .output(OrganizationSchema)
    .mutation(({ ctx, input }) => ctx.services.organizations.update(ctx.org, input)),

  delete: orgProcedure
    .meta({
      errors: [...inOrg, 'org_personal'],
      orgPermission: 'delete_organization',
      openapi: { method: 'DELETE', path: '/api/organizations/{org_id}', tags, summary: 'Delete it with its memberships and invitations' },
    })
    .input(OrgIdInputSchema)
    .output(DeletedOrganizationSchema)
    .mutation(({ ctx }) => ctx.services.organizations.delete(ctx.org)),

  switch: orgProcedure
    .meta({
      errors: [...inOrg],
      openapi: {
        method: 'POST',
        path: '/api/organizations/{org_id}/switch',
        tags,
        summary: 'Act in it when a request names no organisation',
      },
    })
    .input(OrgIdInputSchema)
    .output(OrganizationSchema)
    .mutation(({ ctx }) => ctx.services.organizations.switchTo(ctx.org)),

  me: orgProcedure
    .meta({
      errors: [...inOrg],
      openapi: { method: 'GET', path: '/api/organizations/{org_id}/me', tags, summary: 'The user as a member: role and permissions' },
    })
    .input(OrgIdInputSchema)
    .output(OrganizationMeSchema)
    .query(({ ctx }) => ctx.services.organizations.me(ctx.org)),

  settings: orgProcedure
    .meta({
      errors: [...inOrg],
      orgPermission: 'view_org_settings',
      openapi: { method: 'GET', path: '/api/organizations/{org_id}/settings', tags, summary: 'Its LLM defaults (never the key)' },
    })
    .input(OrgIdInputSchema)
    .output(OrgSettingsSchema)
    .query(({ ctx }) => ctx.services.organizations.settings(ctx.org)),

  updateSettings: orgProcedure
    .meta({
      errors: [...inOrg, 'org_personal'],
      orgPermission: 'edit_llm_settings',
      openapi: {
        method: 'PATCH',
        path: '/api/organizations/{org_id}/settings',
        tags,
        summary: 'Change its LLM defaults; members use them',
      },
    })
    .input(UpdateOrgSettingsInputSchema)
    .output(OrgSettingsSchema)
    .mutation(({ ctx, input }) => ctx.services.organizations.updateSettings(ctx.org, input)),

  conversations: orgProcedure
    .meta({
      errors: [...inOrg],
      orgPermission: 'view_org_conversations',
      openapi: {
        method: 'GET',
        path: '/api/organizations/{org_id}/conversations',
        tags,
        summary: "The conversations started in it, everyone's (owners and admins)",
      },
    })
    .input(OrgConversationsInputSchema)
    .output(OrgConversationsPageSchema)
    .query(({ ctx, input }) => ctx.services.appConversations.inOrganization(ctx.org, input.page_id, input.limit)),

  budget: orgProcedure
    .meta({
      errors: [...inOrg],
      orgPermission: 'edit_org_settings',
      openapi: { method: 'GET', path: '/api/organizations/{org_id}/budgets', tags, summary: "Its monthly budget and this month's spend" },
    })
    .input(OrgIdInputSchema)
    .output(OrgBudgetSchema)
    .query(({ ctx }) => ctx.services.orgBudgets.view(ctx.org)),

  updateBudget: orgProcedure
    .meta({
      errors: [...inOrg, 'org_personal', 'org_budget_invalid'],
      orgPermission: 'edit_org_settings',
      openapi: {
        method: 'PATCH',
        path: '/api/organizations/{org_id}/budgets',
        tags,
        summary: 'Set its monthly budget: a call past it is refused before the provider sees it',
      },
    })
    .input(OrgBudgetUpdateInputSchema)
    .output(OrgBudgetSchema)
    .mutation(({ ctx, input }) => ctx.services.orgBudgets.update(ctx.org, input)),

  providerConnections: orgProcedure
    .meta({
      errors: [...inOrg],
      openapi: { method: 'GET', path: '/api/organizations/{org_id}/provider-connections', tags, summary: 'None: always empty' },
    })
    .input(OrgIdInputSchema)
    .output(ProviderConnectionsSchema)
    .query(() => ({ connections: [] })),

  ...llmProfileProcedures('/api/organizations/{org_id}/profiles'),
});
