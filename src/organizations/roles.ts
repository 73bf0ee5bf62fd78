// The one role policy (docs/organizations.md): what each role of an organisation may do, in
// OpenHands Cloud's permission names (what Agent Canvas reads from /me to show its controls), and
// who may change or remove whom. Every organisation route states the permission it needs
// (routers/organizations*.router.ts, `orgPermission`); the tRPC middleware that checks it is the
// only place a role is compared (src/trpc/org-procedure.ts), for REST and tRPC alike.
import { AppError } from '../errors.js';

export const ORG_ROLES = ['owner', 'admin', 'member'] as const;
export type OrgRole = (typeof ORG_ROLES)[number];

const MEMBER = [
  'manage_secrets',
  'manage_mcp',
  'manage_integrations',
  'manage_application_settings',
  'manage_api_keys',
  'view_org_settings',
  'view_llm_settings',
  'manage_automations',
] as const;
const ADMIN = [
  ...MEMBER,
  'edit_llm_settings',
  'view_billing',
  'invite_user_to_organization',
  'change_user_role:member',
  'change_user_role:admin',
  'edit_org_settings',
  'view_org_conversations',
] as const;
const OWNER = [...ADMIN, 'change_user_role:owner', 'change_organization_name', 'delete_organization'] as const;

export type OrgPermission = (typeof OWNER)[number];

const PERMISSIONS: Record<OrgRole, ReadonlySet<OrgPermission>> = {
  member: new Set(MEMBER),
  admin: new Set(ADMIN),
  owner: new Set(OWNER),
};

export const permissionsOf = (role: OrgRole): OrgPermission[] => [...PERMISSIONS[role]].sort();

export function assertPermitted(role: OrgRole, permission: OrgPermission): void {
  if (!PERMISSIONS[role].has(permission)) {
    throw new AppError('FORBIDDEN', `Requires ${permission} permission`, { reason: 'org_permission_denied' });
  }
}

/**
 * Changing a member's role, or removing them (`to` null): never one's own; an admin acts only on
 * admins and members and never makes an owner; an owner acts on anyone. (The last owner is kept
 * by the members' store, which counts them.)
 */
export function assertMayChangeMember(
  actor: { userId: string; role: OrgRole },
  target: { userId: string; role: OrgRole },
  to: OrgRole | null,
) {
  if (actor.userId === target.userId) {
    const what = to === null ? 'Cannot remove yourself from an organization' : 'Cannot modify your own role';
    throw new AppError('FORBIDDEN', what, { reason: 'org_permission_denied' });
  }
  const mayTouchOwners = actor.role === 'owner';
  const permitted = actor.role !== 'member' && (mayTouchOwners || (target.role !== 'owner' && to !== 'owner'));
  if (!permitted) {
    const what = to === null ? 'You do not have permission to remove this member' : 'You do not have permission to modify this member';
    throw new AppError('FORBIDDEN', what, { reason: 'org_permission_denied' });
  }
}

/** Inviting with a role: owners and admins invite; only owners invite owners. */
export function assertMayInvite(actor: OrgRole, role: OrgRole): void {
  assertPermitted(actor, 'invite_user_to_organization');
  if (role === 'owner' && actor !== 'owner') {
    throw new AppError('FORBIDDEN', 'Only owners can invite with owner role', { reason: 'org_permission_denied' });
  }
}
