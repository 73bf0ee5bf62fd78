// Organisations in OpenHands Cloud's shapes (docs/organizations.md): the list and the user's
// membership that Agent Canvas and CloudClient read, the organisation itself, its members and
// roles, invitations by email, switching the current one, and its LLM defaults (the key
// write-only). The personal organisation's id is its user's id.
import { z } from 'zod';
import { jsonBool, noCoerce, pagingShape as paging } from './common.schema.js';

const ROLE = z.enum(['owner', 'admin', 'member']);
const RoleInput = z.preprocess((v) => (typeof v === 'string' ? v.toLowerCase() : v), ROLE);

export const OrganizationsInputSchema = z.object(paging(100)).prefault({});
export const OrgIdInputSchema = z.object({ org_id: z.string().min(1).max(200) });

export const OrganizationSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    contact_name: z.string(),
    contact_email: z.string(),
    is_personal: z.boolean(),
    created_at: z.string().nullable(),
  })
  .meta({ id: 'Organization' });

export const OrganizationsPageSchema = z
  .object({ items: z.array(OrganizationSchema), next_page_id: z.string().nullable(), current_org_id: z.string().nullable() })
  .meta({ id: 'OrganizationsPage' });

const name = z.string().trim().min(1).max(255);
const contactEmail = z.union([z.email().max(254), z.literal('')]);

export const CreateOrganizationInputSchema = z
  .object({ name, contact_name: z.string().max(255).optional(), contact_email: contactEmail.optional() })
  .meta({ id: 'OrganizationCreate' });
export type CreateOrganizationInput = z.output<typeof CreateOrganizationInputSchema>;

export const UpdateOrganizationInputSchema = OrgIdInputSchema.extend({
  name: name.nullable().optional(),
  contact_name: z.string().max(255).nullable().optional(),
  contact_email: contactEmail.nullable().optional(),
});
export type UpdateOrganizationInput = z.output<typeof UpdateOrganizationInputSchema>;

export const DeletedOrganizationSchema = z
  .object({
    message: z.string(),
    organization: z.object({ id: z.string(), name: z.string(), contact_name: z.string(), contact_email: z.string() }),
  })
  .meta({ id: 'OrganizationDeleted' });

export const OrganizationMeSchema = z
  .object({
    org_id: z.string(),
    user_id: z.string(),
    email: z.string().nullable(),
    role: ROLE,
    permissions: z.array(z.string()),
    // The member's own LLM key, masked (members here use the organisation's or their own settings' key).
    llm_api_key: z.string().nullable(),
    llm_api_key_for_byor: z.null(),
    agent_settings_diff: z.object({}),
    conversation_settings_diff: z.object({}),
    status: z.literal('active'),
  })
  .meta({ id: 'OrganizationMe' });

export const ProviderConnectionsSchema = z.object({ connections: z.array(z.never()) }).meta({ id: 'ProviderConnections' });

// The organisation's LLM defaults, as the Cloud's /settings: the key is never read back.
const LlmDefaultsSchema = z.object({ model: z.string().nullable(), base_url: z.string().nullable(), api_key: z.null() });
export const OrgSettingsSchema = z
  .object({
    agent_settings: z.object({ llm: LlmDefaultsSchema }),
    conversation_settings: z.object({}),
    llm_api_key_set: z.boolean(),
    search_api_key: z.null(),
  })
  .meta({ id: 'OrganizationSettings' });

export const UpdateOrgSettingsInputSchema = OrgIdInputSchema.extend({
  agent_settings_diff: z
    .object({
      llm: z
        .object({
          model: z.string().min(1).max(200).nullable().optional(),
          base_url: z.url().max(2000).nullable().optional(),
          api_key: z.string().min(1).max(4000).nullable().optional(),
        })
        .strict()
        .optional(),
    })
    .strict()
    .optional(),
  conversation_settings_diff: z.object({}).strict().optional(),
  // The Cloud's top-level spelling of the key; null removes it.
  llm_api_key: z.string().min(1).max(4000).nullable().optional(),
}).strict();
export type UpdateOrgSettingsInput = z.output<typeof UpdateOrgSettingsInputSchema>;

export const OrgConversationsInputSchema = OrgIdInputSchema.extend(paging(20));
export const OrgConversationsPageSchema = z
  .object({
    items: z.array(
      z.object({
        id: z.string(),
        user_id: z.string(),
        title: z.string().nullable(),
        selected_repository: z.string().nullable(),
        llm_model: z.string().nullable(),
        execution_status: z.string().nullable(),
        accumulated_cost: z.number(),
        created_at: z.string(),
        updated_at: z.string(),
      }),
    ),
    next_page_id: z.string().nullable(),
  })
  .meta({ id: 'OrgConversationsPage' });

export const OrgBudgetSchema = z
  .object({
    enabled: z.boolean(),
    monthly_limit: z.number().nullable(),
    current_spend: z.number(),
    current_spend_percentage: z.number(),
    reset_day: z.number().int(),
    cycle_start_at: z.string(),
    cycle_end_at: z.string(),
  })
  .meta({ id: 'OrganizationBudget' });

export const OrgBudgetUpdateInputSchema = OrgIdInputSchema.extend({
  enabled: jsonBool().optional(),
  monthly_limit: noCoerce(z.number().gt(0).max(1e9)).nullable().optional(),
});
export type OrgBudgetUpdate = z.output<typeof OrgBudgetUpdateInputSchema>;

const SecretName = z
  .string()
  .trim()
  .min(1)
  .max(256)
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'Secret names are letters, digits and "_", not starting with a digit');
export const CreateOrgSecretInputSchema = OrgIdInputSchema.extend({
  name: SecretName,
  value: z.string().min(1).max(65_536),
  description: z.string().max(1000).nullable().optional(),
});
export type CreateOrgSecretInput = z.output<typeof CreateOrgSecretInputSchema>;
export const UpdateOrgSecretInputSchema = OrgIdInputSchema.extend({
  name: z.string().min(1).max(256),
  value: z.string().min(1).max(65_536).optional(),
  description: z.string().max(1000).nullable().optional(),
});
export type UpdateOrgSecretInput = z.output<typeof UpdateOrgSecretInputSchema>;
export const OrgSecretNameInputSchema = OrgIdInputSchema.extend({ name: z.string().min(1).max(256) });
export const OrgSecretSchema = z.object({ name: z.string(), description: z.string() }).meta({ id: 'OrgSecret' });
export const OrgSecretsSchema = z.object({ secrets: z.array(OrgSecretSchema) }).meta({ id: 'OrgSecrets' });

export const MembersInputSchema = OrgIdInputSchema.extend({
  ...paging(10),
  email: z.string().min(1).max(255).optional(),
});
export type MembersInput = z.output<typeof MembersInputSchema>;
export const MembersCountInputSchema = OrgIdInputSchema.extend({ email: z.string().min(1).max(255).optional() });

export const OrgMemberSchema = z
  .object({
    user_id: z.string(),
    email: z.string().nullable(),
    role_id: z.number().int(),
    role: ROLE,
    role_rank: z.number().int(),
    status: z.literal('active'),
  })
  .meta({ id: 'OrgMember' });
export const OrgMembersPageSchema = z
  .object({ items: z.array(OrgMemberSchema), current_page: z.number().int(), per_page: z.number().int() })
  .meta({ id: 'OrgMembersPage' });

export const MemberInputSchema = OrgIdInputSchema.extend({ user_id: z.string().min(1).max(200) });
export const UpdateMemberInputSchema = MemberInputSchema.extend({ role: RoleInput.nullable().optional() });
export const MessageSchema = z.object({ message: z.string() }).meta({ id: 'Message' });

export const InviteInputSchema = OrgIdInputSchema.extend({
  emails: z.array(z.email().max(254)).min(1).max(100),
  role: RoleInput.default('member'),
});
export type InviteInput = z.output<typeof InviteInputSchema>;

export const InvitationSchema = z
  .object({
    id: z.string(),
    email: z.string(),
    role: ROLE,
    status: z.enum(['pending', 'accepted', 'revoked', 'expired']),
    created_at: z.string(),
    expires_at: z.string(),
    inviter_email: z.string().nullable(),
    // Only in the answer that creates it: the token is not kept, only its hash.
    invite_url: z.string().nullable(),
  })
  .meta({ id: 'OrgInvitation' });

export const InvitedSchema = z
  .object({
    successful: z.array(InvitationSchema),
    failed: z.array(z.object({ email: z.string(), error: z.string() })),
    email_delivery_configured: z.boolean(),
  })
  .meta({ id: 'OrgInvited' });

export const InvitationsSchema = z
  .object({ items: z.array(InvitationSchema), email_delivery_configured: z.boolean(), auto_add_enabled: z.boolean() })
  .meta({ id: 'OrgInvitations' });

export const InvitationIdInputSchema = OrgIdInputSchema.extend({ invitation_id: z.string().min(1).max(64) });

export const AcceptInvitationInputSchema = z.object({ token: z.string().min(1).max(200) }).meta({ id: 'OrgInvitationAccept' });
export const AcceptedInvitationSchema = z
  .object({ success: z.literal(true), org_id: z.string(), org_name: z.string(), role: ROLE })
  .meta({ id: 'OrgInvitationAccepted' });
