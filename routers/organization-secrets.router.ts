// A team organisation's secrets (docs/organizations.md): its members see their names, its owners
// and admins set them, nobody reads a value back; conversations started in the organisation get
// them. (The Cloud keeps secrets per user only; these are ours.)
import { orgProcedure, ORG_SCOPE_ERRORS } from '../src/trpc/procedures.js';
import { router } from '../src/trpc/init.js';
import { MessageResponseSchema } from '../contract/common.schema.js';
import {
  CreateOrgSecretInputSchema,
  OrgIdInputSchema,
  OrgSecretNameInputSchema,
  OrgSecretSchema,
  OrgSecretsSchema,
  UpdateOrgSecretInputSchema,
} from '../contract/organizations.schema.js';

const tags = ['organizations'];
const inOrg = ORG_SCOPE_ERRORS;
const base = '/api/organizations/{org_id}/secrets';

export const organizationSecretsRouter = router({
  list: orgProcedure
    .meta({
      errors: [...inOrg],
      orgPermission: 'view_org_settings',
      openapi: { method: 'GET', path: base, tags, summary: "Its secrets' names (never a value)" },
    })
    .input(OrgIdInputSchema)
    .output(OrgSecretsSchema)
    .query(({ ctx }) => ctx.services.orgSecrets.list(ctx.org)),

  create: orgProcedure
    .meta({
      errors: [...inOrg, 'org_personal', 'secret_exists', 'secret_limit'],
      orgPermission: 'edit_org_settings',
      successStatus: 201,
      openapi: { method: 'POST', path: base, tags, summary: "A secret its members' conversations get" },
    })
    .input(CreateOrgSecretInputSchema)
    .output(OrgSecretSchema)
    .mutation(({ ctx, input }) => ctx.services.orgSecrets.create(ctx.org, input)),

  update: orgProcedure
    .meta({
      errors: [...inOrg, 'org_personal', 'secret_not_found'],
      orgPermission: 'edit_org_settings',
      openapi: { method: 'PUT', path: `${base}/{name}`, tags, summary: 'Change its value or description' },
    })
    .input(UpdateOrgSecretInputSchema)
    .output(OrgSecretSchema)
    .mutation(({ ctx, input }) => ctx.services.orgSecrets.update(ctx.org, input)),

  delete: orgProcedure
    .meta({
      errors: [...inOrg, 'org_personal', 'secret_not_found'],
      orgPermission: 'edit_org_settings',
      openapi: { method: 'DELETE', path: `${base}/{name}`, tags, summary: 'Delete it' },
    })
    .input(OrgSecretNameInputSchema)
    .output(MessageResponseSchema)
    .mutation(({ ctx, input }) => ctx.services.orgSecrets.delete(ctx.org, input.name)),
});
