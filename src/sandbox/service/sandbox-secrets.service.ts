// The secrets a running sandbox may read with its own session key (GET /api/v1/sandboxes/{id}/
// settings/secrets[/{name}]): its owner's custom secrets and git provider tokens. The SDK's
// cloud workspace lists the names and gives the agent one LookupSecret per name, which the agent
// server resolves when a command uses it; so values leave only one at a time, and a provider
// token is always the current one. Provider tokens go by the names the reference gives them
// (github_token, gitlab_token, bitbucket_token); a custom secret of the same name wins.
import type { SecretNames } from '../../../contract/sandbox-secrets.schema.js';
import { AppError } from '../../errors.js';
import type { GitProvidersService } from '../../services/git-providers.service.js';
import type { SandboxKeys } from './sandbox-keys.js';
import type { SandboxUsage } from '../lifecycle/usage.js';
import type { SecretsService } from '../../services/secrets.service.js';

const providerSecretName = (provider: string) => `${provider}_token`;

export class SandboxSecretsService {
  constructor(
    private readonly keys: SandboxKeys,
    private readonly secrets: SecretsService,
    private readonly gitProviders: GitProvidersService,
    private readonly usage: SandboxUsage,
  ) {}

  /**
   * The owner of the sandbox named in the path, when the presented key is that sandbox's and it
   * runs: a paused or stopping sandbox's key opens nothing (the reference's texts and statuses).
   */
  async authenticate(sandboxId: string, presentedKey: string | undefined): Promise<string> {
    if (!presentedKey) throw new AppError('UNAUTHORIZED', 'X-Session-API-Key header is required');
    const sandbox = await this.keys.running(presentedKey);
    if (!sandbox) throw new AppError('UNAUTHORIZED', 'Invalid session API key');
    if (sandbox._id !== sandboxId) throw new AppError('FORBIDDEN', 'Session API key does not match sandbox');
    await this.usage.touch(sandbox._id);
    return sandbox.userId;
  }

  async list(userId: string): Promise<SecretNames> {
    const custom = await this.secrets.list(userId);
    const names = new Set(custom.map((s) => s.name));
    const providers = Object.keys(await this.gitProviders.resolve(userId))
      .map(providerSecretName)
      .filter((name) => !names.has(name))
      .map((name) => ({ name, description: `${name} provider token` }));
    return { secrets: [...custom, ...providers] };
  }

  async value(userId: string, name: string): Promise<string> {
    const custom = await this.secrets.value(userId, name);
    if (custom !== null) return custom;
    const tokens = await this.gitProviders.resolve(userId);
    const provider = Object.entries(tokens).find(([p]) => providerSecretName(p) === name)?.[1];
    if (provider) return provider.token;
    throw new AppError('NOT_FOUND', 'Secret not found', { reason: 'secret_not_found' });
  }
}
