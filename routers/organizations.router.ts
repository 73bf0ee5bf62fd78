// The one personal organisation of every user (its id is the user's id), as today's clients
// expect to find one: the list, the user's membership, and the organisation-scoped LLM profile
// routes Agent Canvas and the CloudClient use once an organisation is selected. Provider
// connections (organisation-wide LLM credentials) do not exist here: the list is empty.
import { authedProcedure } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import {
  OrganizationMeSchema,
  OrganizationsInputSchema,
  OrganizationsPageSchema,
  OrgIdInputSchema,
  ProviderConnectionsSchema,
} from '../contract/account.schema.js';
import { llmProfileProcedures } from './llm-profiles.procedures.js';

const tags = ['organizations'];

export const organizationsRouter = router({
  list: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/organizations', tags, summary: "The user's organisations: the personal one" } })
    .input(OrganizationsInputSchema)
    .output(OrganizationsPageSchema)
    .query(({ ctx, input }) => ctx.services.account.organizations(ctx.user.id, input.page_id, input.limit)),

  me: authedProcedure
    .meta({
      errors: ['organization_not_found'],
      openapi: { method: 'GET', path: '/api/organizations/{org_id}/me', tags, summary: 'The user as a member of the organisation' },
    })
    .input(OrgIdInputSchema)
    .output(OrganizationMeSchema)
    .query(({ ctx, input }) => ctx.services.account.organizationMe(ctx.user.id, input.org_id)),

  providerConnections: authedProcedure
    .meta({
      errors: ['organization_not_found'],
      openapi: { method: 'GET', path: '/api/organizations/{org_id}/provider-connections', tags, summary: 'None: always empty' },
    })
    .input(OrgIdInputSchema)
    .output(ProviderConnectionsSchema)
    .query(({ ctx, input }) => {
      ctx.services.account.ownOrganization(ctx.user.id, input.org_id);
      return { connections: [] };
    }),

  ...llmProfileProcedures('/api/organizations/{org_id}/profiles'),
});
