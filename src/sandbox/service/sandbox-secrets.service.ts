// The secrets a running sandbox may read with its own session key (GET /api/v1/sandboxes/{id}/
// settings/secrets[/{name}]): its owner's custom secrets and git provider tokens. The SDK's
// cloud workspace lists the names and gives the agent one LookupSecret per name, which the agent
// server resolves when a command uses it; so values leave only one at a time, and a provider
// token is always the current one. Provider tokens go by the names the reference gives them
// (github_token, gitlab_token, bitbucket_token); a custom secret of the same name wins.
import type { SecretNames } from '../../../contract/sandbox-secrets.schema.js';
import { AppError } from '../../errors.js';
import type { GitProvidersService } from '../../git/git-providers.service.js';
import type { SecretsService } from '../../services/secrets.service.js';

const providerSecretName = (provider: string) => `${provider}_token`;

export class SandboxSecretsService {
  constructor(
    private readonly secrets: SecretsService,
    private readonly gitProviders: GitProvidersService,
  ) {}

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
