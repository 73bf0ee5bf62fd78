// API keys and browser sessions, wired together: revoking a key ends the sessions opened with
// it. The service (src/domain.ts) and the operator CLI (src/cli.ts) both build them here, so
// no way of revoking can forget the sessions.
import type { createModels } from '../../../models/index.js';
import type { Config } from '../../config/config.js';
import { ApiKeysService } from './api-keys.service.js';
import { SessionsService } from './sessions.service.js';
import type { VerifiedCacheOptions } from './verified-cache.js';

export function createCredentialServices(
  models: Pick<ReturnType<typeof createModels>, 'ApiKey' | 'Session'>,
  config: Pick<Config, 'auth' | 'session'>,
  clock?: () => number,
): { apiKeys: ApiKeysService; sessions: SessionsService } {
  // Verified keys and sessions are remembered for AUTH_CACHE_TTL_MS (src/services/identity/verified-cache.ts).
  const verified: VerifiedCacheOptions = { ttlMs: config.auth.cacheTtlMs, ...(clock ? { now: clock } : {}) };
  const apiKeys: ApiKeysService = new ApiKeysService(
    models.ApiKey,
    config.auth.sessionApiKey,
    (keyId) => sessions.endForKey(keyId),
    verified,
  );
  const sessions = new SessionsService(models.Session, apiKeys, config.session.ttlSeconds, verified, config.session.idleSeconds);
  return { apiKeys, sessions };
}
