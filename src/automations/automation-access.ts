// What the OpenHands automation service needs of identities here (docs/automation-service-notes.md):
// it knows users and organisations by UUIDs only, and acts for a user with a key this service
// hands it (POST /api/service/users/{user}/orgs/{org}/api-keys) again and again, so the same key
// must come back each time; only a key the user holds (made when they use automations), so that
// revoking it, or leaving the organisation, stops their automations. A user's alias is a UUID derived from their id (recorded, to map it
// back); a personal organisation's alias is its user's (the Cloud's convention: a personal
// organisation's id is its user's), a team organisation's id is a UUID already. The automation
// key is an API key like any other (listed, revocable, bound to the organisation) that is also
// kept sealed, so it can be handed out again until its user revokes it.
import crypto from 'node:crypto';
import { automationKeyContext, type Models } from '../../models/index.js';
import type { SecretBox } from '../crypto.js';
import type { OrgAccess } from '../organizations/org-access.js';
import type { ApiKeysService } from '../services/identity/api-keys.service.js';

/** What the automation service checks on users/me: seeing automations, and editing any of the organisation's. */
export const AUTOMATION_PERMISSIONS = ['view_automations', 'manage_automations'];
export const AUTOMATION_KEY_NAME = 'automation';

// This service's UUID v5 namespace for user aliases (random, fixed: an alias never changes).
const NAMESPACE = Buffer.from('5b0c9f7e2d1a4c3b8e6f0a9d7c5b3e1f', 'hex');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A user id as a UUID: version 5 (RFC 9562 5.5), the SHA-1 of the namespace and the id. */
export function userAlias(userId: string): string {
  const hash = crypto.createHash('sha1').update(NAMESPACE).update(userId, 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export class AutomationAccess {
  /** The key the automation service presents on the key route (AUTOMATION_SERVICE_KEY, else derived from the encryption key); null: none configured. */
  readonly serviceKey: string | null;

  constructor(
    private readonly models: Pick<Models, 'ApiKey' | 'AutomationUser'>,
    private readonly box: SecretBox,
    private readonly apiKeys: ApiKeysService,
    private readonly orgAccess: OrgAccess,
    configured: { serviceKey: string | null } | null = null,
  ) {
    this.serviceKey = configured ? (configured.serviceKey ?? box.deriveKey('automation-service-key').toString('hex')) : null;
  }

  /** The user and organisation as the automation service knows them; the user's alias is recorded to map it back. */
  async aliases(userId: string, orgId: string): Promise<{ userId: string; orgId: string }> {
    const alias = userAlias(userId);
    await this.models.AutomationUser.updateOne({ _id: alias }, { $setOnInsert: { userId } }, { upsert: true });
    return { userId: alias, orgId: orgId === userId ? alias : orgId };
  }

  /** The user an alias stands for (the automation service's user_id, which Canvas looks up as a member); null: no alias. */
  async userOf(alias: string): Promise<string | null> {
    if (!UUID.test(alias)) return null;
    return (await this.models.AutomationUser.findById(alias, { userId: 1 }).lean())?.userId ?? null;
  }

  /** Back from the automation service's ids; null for an unknown user or an organisation they are not in. */
  async fromAliases(userAliasId: string, orgAliasId: string): Promise<{ userId: string; orgId: string } | null> {
    if (!UUID.test(orgAliasId)) return null;
    const userId = await this.userOf(userAliasId);
    if (!userId) return null;
    const orgId = orgAliasId === userAliasId ? userId : orgAliasId;
    return (await this.orgAccess.membership(userId, orgId)) ? { userId, orgId } : null;
  }

  /**
   * The key automations act with for the user in the organisation, as the user's own calls get it:
   * the same one each time, a new one after they revoked it (they use automations again).
   */
  async keyFor(userId: string, orgId: string): Promise<string> {
    const kept = await this.heldKey(userId, orgId);
    if (kept) return kept;
    const { key, info } = await this.apiKeys.create(userId, AUTOMATION_KEY_NAME, null, orgId);
    await this.models.ApiKey.updateOne(
      { _id: info.id },
      { $set: { purpose: 'automation', sealedKey: this.box.encrypt(key, automationKeyContext(info.id)) } },
    );
    return key;
  }

  /**
   * The key the automation service gets for the user (the key route): only one they hold. None
   * made yet, or revoked: null, and their automations do not run until they use automations again.
   */
  async heldKey(userId: string, orgId: string): Promise<string | null> {
    const kept = await this.models.ApiKey.findOne(
      { userId, orgId, purpose: 'automation', revokedAt: null, sealedKey: { $ne: null } },
      { sealedKey: 1 },
    )
      .sort({ createdAt: 1 })
      .lean();
    return kept?.sealedKey ? this.box.decrypt(kept.sealedKey, automationKeyContext(kept._id)) : null;
  }

  /** Whether the request was made with an automation key (the automation service, or a run's code in its sandbox). */
  async isAutomationKey(user: { keyId?: string | undefined }): Promise<boolean> {
    return !!user.keyId && (await this.models.ApiKey.exists({ _id: user.keyId, purpose: 'automation' })) !== null;
  }

  /**
   * users/me as the automation service reads it, for a request made with an automation key: the
   * aliases, the role and the two permissions (every member may see and edit the organisation's
   * automations here: roles do not narrow them yet). Null for any other request.
   */
  async meFor(user: { id: string; keyId?: string | undefined; boundOrgId?: string | null | undefined }) {
    if (!(await this.isAutomationKey(user))) return null;
    const orgId = user.boundOrgId ?? user.id;
    const membership = await this.orgAccess.membership(user.id, orgId);
    if (!membership) return null;
    const aliases = await this.aliases(user.id, orgId);
    return { id: aliases.userId, org_id: aliases.orgId, role: membership.role, permissions: AUTOMATION_PERMISSIONS };
  }
}
