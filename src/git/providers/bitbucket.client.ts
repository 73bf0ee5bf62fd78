// Bitbucket (Cloud API 2.0, or a Bitbucket-style host's api.<host>/2.0). Repositories live in
// workspaces (the UI's "installations"); paging is the body's `next` URL, followed only on the
// API's own origin so a forged link cannot carry the token elsewhere.
import type { Branch, GitUser, PaginatedBranches, Repository, SuggestedTask } from '../../../contract/user-git.schema.js';
import {
  ALL_REPOSITORIES_CAP,
  dedupeById,
  encodePath,
  publicUrlSegments,
  query,
  repositoryPath,
  settleAll,
  str,
  textOf,
  idOf,
  userIdOf,
  type ClientContext,
  type GitProviderClient,
  type RepositoryFile,
  type RepositoryPageQuery,
  type RepositorySearchQuery,
  type RepositorySort,
} from './provider-client.js';
import { originOf, providerApiBase } from './provider-api.js';
import { ProviderError } from './provider-http.js';

type Json = Record<string, any>;

const MAX_WORKSPACES = 100;

export class BitbucketClient implements GitProviderClient {
  readonly provider = 'bitbucket' as const;
  private readonly base: string;

  constructor(private readonly ctx: ClientContext) {
    this.base = providerApiBase('bitbucket', ctx.host, ctx.roots)!;
  }

  get host(): string | null {
    return this.ctx.host;
  }

  private request<T = Json>(url: string, expect: 'json' | 'text' = 'json') {
    return this.ctx.http.request<T>(url, { provider: 'bitbucket', host: this.ctx.host, token: this.ctx.token, expect });
  }

  private get<T = Json>(path: string, expect: 'json' | 'text' = 'json') {
    return this.request<T>(this.base + path, expect);
  }

  /** Follows `next` links from `path` while they stay on the API's origin, up to `cap` values. */
  private async collect(path: string, cap: number): Promise<Json[]> {
    const values: Json[] = [];
    let url: string | null = this.base + path;
    while (url && values.length < cap) {
      const { body }: { body: Json } = await this.request(url);
      values.push(...(body.values ?? []));
      url = typeof body.next === 'string' && new URL(body.next).origin === new URL(this.base).origin ? body.next : null;
    }
    return values.slice(0, cap);
  }

  async user(): Promise<GitUser> {
    const { body } = await this.get('/user');
    return {
      id: userIdOf(body),
      login: str(body.username) ?? '',
      avatar_url: str(body.links?.avatar?.href) ?? '',
      company: null,
      name: str(body.display_name),
      email: null,
    };
  }

  async installations(): Promise<string[]> {
    return (await this.collect('/workspaces', MAX_WORKSPACES)).map((w) => textOf(w.slug));
  }

  async repositories({ page, perPage, sort, installationId }: RepositoryPageQuery): Promise<Repository[]> {
    if (!installationId) return []; // Bitbucket lists repositories per workspace (reference)
    return this.workspacePage(installationId, { pagelen: perPage, page, sort: sortField(sort) });
  }

  private async workspacePage(workspace: string, params: Record<string, string | number>): Promise<Repository[]> {
    const path = `/repositories/${encodeURIComponent(workspace)}`;
    const { body } = await this.get(`${path}?${query(params)}`);
    // The UI reads page=N from a rel="next" link; Bitbucket's own next URL is rebuilt around it.
    const nextPage = typeof body.next === 'string' ? new URL(body.next).searchParams.get('page') : null;
    const link =
      typeof body.next !== 'string' ? '' : nextPage ? `<${this.base}${path}?page=${nextPage}>; rel="next"` : `<${body.next}>; rel="next"`;
    return (body.values ?? []).map((r: Json) => toRepository(r, link));
  }

  async allRepositories(sort: RepositorySort): Promise<Repository[]> {
    const all: Repository[] = [];
    for (const workspace of await this.installations()) {
      if (all.length >= ALL_REPOSITORIES_CAP) break;
      const values = await this.collect(
        `/repositories/${encodeURIComponent(workspace)}?${query({ pagelen: 100, sort: sortField(sort) })}`,
        ALL_REPOSITORIES_CAP - all.length,
      );
      all.push(...values.map((r) => toRepository(r, null)));
    }
    return all;
  }

  async searchRepositories({ query: text, perPage, sort }: RepositorySearchQuery): Promise<Repository[]> {
    const url = publicUrlSegments(text, ['bitbucket.org', ...(this.ctx.host ? [new URL(originOf(this.ctx.host)).host] : [])]);
    if (url) return url.length >= 2 ? [await this.details(`${url[0]}/${url[1]}`)] : [];
    const byName = (workspace: string, name: string) =>
      this.workspacePage(workspace, { pagelen: perPage, page: 1, sort: sortField(sort), q: `name~"${name.replace(/["\\]/g, '\\$&')}"` });
    if (text.includes('/')) {
      const [workspace, ...rest] = text.split('/');
      return byName(workspace!, rest.join('/'));
    }
    const workspaces = await this.installations();
    const lowered = text.toLowerCase();
    return dedupeById(
      await settleAll([
        // Workspaces named like the query: their first page; then matching names in every workspace.
        ...workspaces
          .filter((w) => w.toLowerCase().includes(lowered))
          .map((w) => this.workspacePage(w, { pagelen: perPage, page: 1, sort: sortField(sort) })),
        ...workspaces.map((w) => byName(w, text)),
      ]),
    );
  }

  private async details(repository: string): Promise<Repository> {
    const { body } = await this.get(`/repositories/${repositoryPath('bitbucket', repository, 2)}`);
    return toRepository(body, null);
  }

  async branches(repository: string, page: number, perPage: number): Promise<PaginatedBranches> {
    const path = `/repositories/${repositoryPath('bitbucket', repository, 2)}/refs/branches`;
    const { body } = await this.get(`${path}?${query({ pagelen: perPage, page, sort: '-target.date' })}`);
    return {
      branches: (body.values ?? []).map(toBranch),
      has_next_page: typeof body.next === 'string',
      current_page: page,
      per_page: perPage,
      total_count: typeof body.size === 'number' ? body.size : null,
    };
  }

  async searchBranches(repository: string, text: string, perPage: number): Promise<Branch[]> {
    const path = `/repositories/${repositoryPath('bitbucket', repository, 2)}/refs/branches`;
    const { body } = await this.get(
      `${path}?${query({ pagelen: perPage, q: `name~"${text.replace(/["\\]/g, '\\$&')}"`, sort: '-target.date' })}`,
    );
    return (body.values ?? []).map(toBranch);
  }

  async suggestedTasks(): Promise<SuggestedTask[]> {
    return []; // the reference has no Bitbucket task queries
  }

  private async mainBranch(repository: string): Promise<string> {
    const { body } = await this.get(`/repositories/${repositoryPath('bitbucket', repository, 2)}`);
    const main = str(body.mainbranch?.name);
    if (!main) throw new ProviderError('bitbucket', 'not_found', 'Not found on bitbucket');
    return main;
  }

  async listFiles(repository: string, dir: string): Promise<RepositoryFile[]> {
    const main = await this.mainBranch(repository);
    const { body } = await this.get(
      `/repositories/${repositoryPath('bitbucket', repository, 2)}/src/${encodeURIComponent(main)}/${encodePath(dir)}/?pagelen=100`,
    );
    return (body.values ?? [])
      .filter((item: Json) => item.type === 'commit_file')
      .map((item: Json) => ({ name: textOf(item.path).split('/').pop()!, path: textOf(item.path) }));
  }

  async readFile(repository: string, path: string): Promise<string> {
    const main = await this.mainBranch(repository);
    // Raw text: the reference decoded it as JSON and so never read a Bitbucket microagent.
    const answer = await this.get<string>(
      `/repositories/${repositoryPath('bitbucket', repository, 2)}/src/${encodeURIComponent(main)}/${encodePath(path)}`,
      'text',
    );
    return answer.body;
  }
}

function sortField(sort: RepositorySort): string {
  if (sort === 'created') return '-created_on';
  if (sort === 'full_name') return 'name';
  return '-updated_on';
}

function toRepository(r: Json, linkHeader: string | null): Repository {
  const workspace = str(r.workspace?.slug);
  const slug = str(r.slug);
  return {
    id: idOf(r.uuid),
    full_name: workspace && slug ? `${workspace}/${slug}` : '',
    git_provider: 'bitbucket',
    is_public: r.is_private === false,
    stargazers_count: null,
    link_header: linkHeader,
    pushed_at: str(r.updated_on),
    owner_type: 'organization',
    main_branch: str(r.mainbranch?.name),
  };
}

const toBranch = (b: Json): Branch => ({
  name: textOf(b.name),
  commit_sha: str(b.target?.hash) ?? '',
  protected: false,
  last_push_date: str(b.target?.date),
});
