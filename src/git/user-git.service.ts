// The user's repositories through their stored provider tokens (/api/user/*). Chooses which
// providers to ask (the one named, or each stored one in order) and turns provider failures
// into domain errors once:
//   no token → UNAUTHORIZED git_token_required (the reference's bare-string 401 texts);
//   the provider refused the token → UNAUTHORIZED invalid_provider_token;
//   unreachable, failing, timed out or malformed → BAD_GATEWAY provider_unreachable;
//   rate limited → TOO_MANY_REQUESTS; too many calls in flight here → SERVICE_UNAVAILABLE.
// Where several providers are asked, the first answer wins; when none answers, the most
// telling failure is reported (trouble before refusals before "not found").
import type { ProviderType } from '../../contract/common.schema.js';
import type {
  Branch,
  GitUser,
  Microagent,
  MicroagentContent,
  PaginatedBranches,
  RepositoriesInput,
  Repository,
  SearchRepositoriesInput,
  SuggestedTask,
} from '../../contract/user-git.schema.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { BitbucketClient } from './providers/bitbucket.client.js';
import type { ClientContext, GitProviderClient } from './providers/provider-client.js';
import { GitHubClient } from './providers/github.client.js';
import { GitLabClient } from './providers/gitlab.client.js';
import { isMicroagentFile, microagentsDir, parseMicroagent, withoutDomain } from './providers/microagents.js';
import type { ProviderRoots } from './providers/provider-api.js';
import { ProviderError, providerAppError, type ProviderHttp } from './providers/provider-http.js';
import type { GitProvidersService } from './git-providers.service.js';

// The reference's texts for "no token stored", per route.
const TOKEN_REQUIRED = 'Git provider token required. (such as GitHub).';
const TOKEN_REQUIRED_SHORT = 'Git provider token required.';
const NO_PROVIDERS = 'No providers set.';

const CLIENTS = { github: GitHubClient, gitlab: GitLabClient, bitbucket: BitbucketClient } as const;

export class UserGitService {
  constructor(
    private readonly tokens: GitProvidersService,
    private readonly http: ProviderHttp,
    private readonly roots: ProviderRoots,
    private readonly log: Logger,
  ) {}

  async info(userId: string): Promise<GitUser> {
    const clients = await this.clients(userId, TOKEN_REQUIRED);
    return this.firstAnswer(clients, (c) => c.user(), { unauthorized: 'Need valid provider token' });
  }

  async installations(userId: string, provider: ProviderType): Promise<string[]> {
    const client = await this.client(userId, provider, TOKEN_REQUIRED);
    if (!client.installations)
      throw new AppError('BAD_REQUEST', `Provider ${provider} doesn't support installations`, { reason: 'provider_unsupported' });
    return this.guard(client, () => client.installations!());
  }

  async repositories(userId: string, input: RepositoriesInput): Promise<Repository[]> {
    const { selected_provider: provider, page, per_page: perPage, sort, installation_id: installationId } = input;
    if (provider) {
      const client = await this.client(userId, provider, TOKEN_REQUIRED);
      return this.guard(client, () => client.repositories({ page, perPage, sort, installationId }));
    }
    // Without a provider (the UI always names one): every repository of every provider.
    return this.fromEach(await this.clients(userId, TOKEN_REQUIRED), (c) => c.allRepositories(sort));
  }

  async searchRepositories(userId: string, input: SearchRepositoriesInput): Promise<Repository[]> {
    const search = { query: input.query, perPage: input.per_page, sort: input.sort, order: input.order };
    if (input.selected_provider) {
      const client = await this.client(userId, input.selected_provider, TOKEN_REQUIRED_SHORT);
      return this.guard(client, () => client.searchRepositories(search));
    }
    return this.fromEach(await this.clients(userId, TOKEN_REQUIRED_SHORT), (c) => c.searchRepositories(search));
  }

  async branches(userId: string, repository: string, page: number, perPage: number, provider?: ProviderType): Promise<PaginatedBranches> {
    const clients = provider ? [await this.client(userId, provider, TOKEN_REQUIRED)] : await this.clients(userId, TOKEN_REQUIRED);
    const empty = { branches: [], has_next_page: false, current_page: page, per_page: perPage, total_count: 0 };
    // A repository no provider knows has no branches (reference); trouble is reported, not hidden.
    return this.firstAnswer(clients, (c) => c.branches(repository, page, perPage), { notFound: () => empty });
  }

  async searchBranches(userId: string, repository: string, query: string, perPage: number, provider?: ProviderType): Promise<Branch[]> {
    const clients = provider
      ? [await this.client(userId, provider, TOKEN_REQUIRED_SHORT)]
      : await this.clients(userId, TOKEN_REQUIRED_SHORT);
    return this.firstAnswer(clients, (c) => c.searchBranches(repository, query, perPage), { notFound: () => [] });
  }

  async suggestedTasks(userId: string): Promise<SuggestedTask[]> {
    return this.fromEach(await this.clients(userId, NO_PROVIDERS), (c) => c.suggestedTasks());
  }

  async microagents(userId: string, repositoryName: string): Promise<Microagent[]> {
    const repository = withoutDomain(repositoryName);
    const clients = await this.clients(userId, null);
    const createdAt = new Date().toISOString(); // providers do not say; the reference answers "now"
    const found = await this.firstAnswer(
      clients,
      async (client) => {
        const cursorrules = await orMissing(
          client.readFile(repository, '.cursorrules').then(() => [{ name: 'cursorrules', path: '.cursorrules' }]),
        );
        const files = (await orMissing(client.listFiles(repository, microagentsDir(repository)))).filter(isMicroagentFile);
        const agents = [...cursorrules, ...files.map((f) => ({ name: f.name.slice(0, -'.md'.length), path: f.path }))];
        // An empty answer lets the next provider try (reference: the first non-empty result wins).
        if (agents.length === 0) throw new ProviderError(client.provider, 'not_found', 'No microagents');
        return agents.map((a) => ({ ...a, created_at: createdAt }));
      },
      { notFound: () => [], unauthorized: `Unable to fetch microagents for ${repositoryName}` },
    );
    return found;
  }

  async microagentContent(userId: string, repositoryName: string, filePath: string): Promise<MicroagentContent> {
    const repository = withoutDomain(repositoryName);
    const clients = await this.clients(userId, null);
    const notFound = () => {
      throw new AppError('NOT_FOUND', `Microagent file ${filePath} not found in ${repositoryName}`, { reason: 'provider_not_found' });
    };
    return this.firstAnswer(
      clients,
      async (client) => ({
        ...parseMicroagent(await client.readFile(repository, filePath)),
        path: filePath,
        git_provider: client.provider,
      }),
      { notFound },
    );
  }

  /** Clients for every stored token that has an API, in stored order; none → git_token_required (or [] when allowed). */
  private async clients(userId: string, noTokenMessage: string | null): Promise<GitProviderClient[]> {
    const stored = await this.tokens.resolve(userId);
    const clients = Object.entries(stored).flatMap(([provider, t]) => {
      const Client = CLIENTS[provider as keyof typeof CLIENTS];
      const context: ClientContext = { http: this.http, token: t.token, host: t.host, roots: this.roots };
      return Client ? [new Client(context)] : [];
    });
    if (clients.length === 0 && noTokenMessage !== null) throw tokenRequired(noTokenMessage);
    return clients;
  }

  private async client(userId: string, provider: ProviderType, noTokenMessage: string): Promise<GitProviderClient> {
    if (provider === 'enterprise_sso') {
      throw new AppError('BAD_REQUEST', 'Provider enterprise_sso cannot be browsed', { reason: 'provider_unsupported' });
    }
    const clients = await this.clients(userId, noTokenMessage);
    const client = clients.find((c) => c.provider === provider);
    if (!client) throw tokenRequired(`No ${provider} token is stored`);
    return client;
  }

  /** One provider call; anything but a ProviderError (a malformed answer) reads as a failing provider. */
  private async guard<T>(client: GitProviderClient, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw providerAppError(this.providerError(client, error));
    }
  }

  private providerError(client: GitProviderClient, error: unknown): ProviderError {
    if (error instanceof ProviderError) return error;
    this.log.warn({ provider: client.provider, err: { message: (error as Error)?.message } }, 'unexpected git provider answer');
    // On a host the user named, this reads like every other failure there (provider-http.ts).
    const message = client.host ? `Could not reach ${client.provider}` : `${client.provider} sent an unexpected response`;
    return new ProviderError(client.provider, 'unavailable', message);
  }

  /** The first provider that answers; otherwise the most telling failure (or the notFound fallback). */
  private async firstAnswer<T>(
    clients: GitProviderClient[],
    call: (client: GitProviderClient) => Promise<T>,
    options: { notFound?: () => T; unauthorized?: string } = {},
  ): Promise<T> {
    const failures: ProviderError[] = [];
    for (const client of clients) {
      try {
        return await call(client);
      } catch (error) {
        failures.push(this.providerError(client, error));
      }
    }
    const worst = mostTelling(failures);
    if ((!worst || worst.kind === 'not_found') && options.notFound) return options.notFound();
    if (!worst) throw tokenRequired(TOKEN_REQUIRED);
    throw providerAppError(worst, worst.kind === 'unauthorized' ? options.unauthorized : undefined);
  }

  /** Every provider's answer, in order; providers that fail are left out unless all fail. */
  private async fromEach<T>(clients: GitProviderClient[], call: (client: GitProviderClient) => Promise<T[]>): Promise<T[]> {
    const results = await Promise.allSettled(clients.map((c) => call(c)));
    const failures = results.flatMap((r, i) => (r.status === 'rejected' ? [this.providerError(clients[i]!, r.reason)] : []));
    if (failures.length > 0 && failures.length === clients.length) throw providerAppError(mostTelling(failures)!);
    return results.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  }
}

const tokenRequired = (message: string) => new AppError('UNAUTHORIZED', message, { reason: 'git_token_required' });

async function orMissing<T>(call: Promise<T[]>): Promise<T[]> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof ProviderError && error.kind === 'not_found') return [];
    throw error;
  }
}

const SEVERITY: Record<ProviderError['kind'], number> = {
  busy: 7,
  unavailable: 6,
  rate_limited: 5,
  host_not_allowed: 4,
  unauthorized: 3,
  forbidden: 2,
  not_found: 1,
};

function mostTelling(failures: ProviderError[]): ProviderError | undefined {
  return failures.reduce<ProviderError | undefined>(
    (worst, f) => (!worst || SEVERITY[f.kind] > SEVERITY[worst.kind] ? f : worst),
    undefined,
  );
}
