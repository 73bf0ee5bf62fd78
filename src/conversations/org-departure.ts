// What a member holds in an organisation ends when they leave it (removed, or the organisation
// deleted; docs/organizations.md): their API keys bound to it are revoked (and the browser
// sessions those keys opened), when they were removed their identity-provider browser sessions
// end (they sign in again, which asks the provider anew; an organisation deleted signs nobody
// out), the LLM gateway routes of the conversations they
// started in it are closed (the organisation's LLM key and MCP keys open nothing from then on),
// and the sandboxes those conversations ran in are paused. Their conversations stay theirs.
import type { ApiKeysService } from '../services/identity/api-keys.service.js';
import { identityKeyId, type SessionsService } from '../services/identity/sessions.service.js';
import type { LlmRoutes } from '../llm-gateway/llm-routes.js';
import type { Logger } from '../logger.js';
import type { SandboxesService } from '../sandbox/index.js';
import type { ConversationStore } from './records/store.js';

export interface OrgDepartureDeps {
  store: Pick<ConversationStore, 'ofMemberInOrganization'>;
  apiKeys: Pick<ApiKeysService, 'list' | 'revoke'>;
  sessions: Pick<SessionsService, 'endForKey'>;
  llmRoutes: Pick<LlmRoutes, 'close'>;
  sandboxes: Pick<SandboxesService, 'pause'>;
  log: Logger;
}

export class OrgDeparture {
  constructor(private readonly deps: OrgDepartureDeps) {}

  /** Each step is tried whatever the others did; a failure is logged (the removal itself stands). */
  async left(orgId: string, userId: string, how: 'removed' | 'deleted'): Promise<void> {
    const { store, apiKeys, sessions, llmRoutes, sandboxes, log } = this.deps;
    const failed = (what: string) => (error: unknown) => log.warn({ err: error, orgId, userId }, `leaving an organization: ${what} failed`);
    const keys = await apiKeys.list(userId).catch((error: unknown) => (failed('listing keys')(error), []));
    for (const key of keys) {
      if (key.orgId === orgId && key.revokedAt === null) await apiKeys.revoke(key.id).catch(failed('revoking a key'));
    }
    if (how === 'removed') await sessions.endForKey(identityKeyId(userId)).catch(failed('ending the sign-in sessions'));
    const conversations = await store
      .ofMemberInOrganization(orgId, userId)
      .catch((error: unknown) => (failed('listing conversations')(error), []));
    for (const conversation of conversations) await llmRoutes.close({ conversationId: conversation._id }).catch(failed('closing a route'));
    for (const sandboxId of new Set(conversations.flatMap((c) => (c.sandboxId ? [c.sandboxId] : [])))) {
      await sandboxes.pause(userId, sandboxId).catch(failed('pausing a sandbox'));
    }
  }
}
