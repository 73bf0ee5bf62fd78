// The organisations wing (docs/organizations.md): who acts in which organisation, the
// organisations, their members and invitations, wired over one access reader.
import type { Models } from '../../models/index.js';
import type { SecretBox } from '../crypto.js';
import { InvitationsService } from './invitations.service.js';
import { MembersService } from './members.service.js';
import { OrgAccess } from './org-access.js';
import { OrganizationsService, type OrganizationsDeps } from './organizations.service.js';
import { OrgSecretsService } from './org-secrets.service.js';

export type { OrgMembership } from './org-access.js';
export { orgLlmKeyContext, type OrgLlmDefaults } from './organizations.service.js';
export { orgSecretContext } from './org-secrets.service.js';
export { INVITATION_PAGE } from './invitations.service.js';
export type { OrgPermission, OrgRole } from './roles.js';

export interface OrganizationParts {
  models: Models;
  box: SecretBox;
  isAdmin: OrganizationsDeps['isAdmin'];
  emailOf: OrganizationsDeps['emailOf'];
  personalLlm: OrganizationsDeps['personalLlm'];
  onLeft: NonNullable<OrganizationsDeps['onLeft']>;
  now?: () => number;
}

export function createOrganizationServices(parts: OrganizationParts) {
  const { models, emailOf, now } = parts;
  const orgAccess = new OrgAccess(models);
  return {
    orgAccess,
    organizations: new OrganizationsService({ ...parts, access: orgAccess }),
    orgMembers: new MembersService(models, orgAccess, emailOf, parts.onLeft),
    orgInvitations: new InvitationsService({ models, access: orgAccess, emailOf, ...(now ? { now } : {}) }),
    orgSecrets: new OrgSecretsService(models, parts.box, now),
  };
}
