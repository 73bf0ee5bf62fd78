// GitHub (and GitHub Enterprise at <host>/api/v3): REST for users, repositories, branches and
// contents; GraphQL for branch search and suggested tasks.
import type { Branch, GitUser, PaginatedBranches, Repository, SuggestedTask } from '../../../contract/user-git.schema.js';
import {
  allPages,
  dedupeById,
  encodePath,
  hasNextLink,
  publicUrlSegments,
  query,
  repositoryPath,
  settleAll,
  str,
  textOf,
  idOf,
  wholeOf,
  userIdOf,
  type ClientContext,
  type GitProviderClient,
  type RepositoryFile,
  type RepositoryPageQuery,
  type RepositorySearchQuery,
  type RepositorySort,
} from './provider-client.js';
import { originOf, providerApiBase, providerGraphqlUrl } from './provider-api.js';
import { ProviderError } from './provider-http.js';
import { BRANCH_SEARCH, OPEN_ISSUES, OPEN_PULL_REQUESTS } from './github.queries.js';

type Json = Record<string, any>;

export class GitHubClient implements GitProviderClient {
  readonly provider = 'github' as const;
  private readonly base: string;
  private readonly graphqlUrl: string;

  constructor(private readonly ctx: ClientContext) {
    this.base = providerApiBase('github', ctx.host, ctx.roots)!;
    this.graphqlUrl = providerGraphqlUrl('github', ctx.host, ctx.roots);
  }

  get host(): string | null {
    return this.ctx.host;
  }

  private get<T = Json>(path: string) {
    return this.ctx.http.request<T>(this.base + path, {
      provider: 'github',
      host: this.ctx.host,
      token: this.ctx.token,
      accept: 'application/vnd.github.v3+json',
    });
  }

  private async graphql(text: string, variables: Json): Promise<Json> {
    const { body } = await this.ctx.http.request<Json>(this.graphqlUrl, {
      provider: 'github',
      host: this.ctx.host,
      token: this.ctx.token,
      method: 'POST',
      json: { query: text, variables },
    });
    if (Array.isArray(body.errors) && body.errors.length > 0) {
      const notFound = body.errors.some((e: Json) => e?.type === 'NOT_FOUND');
      throw new ProviderError(
        'github',
        notFound ? 'not_found' : 'unavailable',
        notFound ? 'Not found on github' : 'github answered a GraphQL error',
      );
    }
    // An answer without data is no GraphQL answer (an empty object would read as "nothing found").
    if (typeof body.data !== 'object' || body.data === null) throw new TypeError('GraphQL answer without data');
    return body.data;
  }

  async user(): Promise<GitUser> {
    const { body } = await this.get('/user');
    return {
      id: userIdOf(body),
      login: str(body.login) ?? '',
      avatar_url: str(body.avatar_url) ?? '',
      company: str(body.company),
      name: str(body.name),
      email: str(body.email),
    };
  }

  async installations(): Promise<string[]> {
    const { body } = await this.get('/user/installations');
    return (body.installations ?? []).map((i: Json) => idOf(i.id));
  }

  async repositories({ page, perPage, sort, installationId }: RepositoryPageQuery): Promise<Repository[]> {
    if (installationId) {
      const answer = await this.get(
        `/user/installations/${encodeURIComponent(installationId)}/repositories?${query({ page, per_page: perPage })}`,
      );
      return (answer.body.repositories ?? []).map((r: Json) => toRepository(r, answer.link ?? ''));
    }
    const answer = await this.get<Json[]>(`/user/repos?${query({ page, per_page: perPage, sort: listSort(sort) })}`);
    return answer.body.map((r) => toRepository(r, answer.link ?? ''));
  }

  async allRepositories(sort: RepositorySort): Promise<Repository[]> {
    return allPages(async (page) => {
      const answer = await this.get<Json[]>(`/user/repos?${query({ per_page: 100, sort: listSort(sort), page })}`);
      return { items: answer.body.map((r) => toRepository(r, null)), link: answer.link };
    });
  }

  async searchRepositories({ query: text, perPage, sort, order }: RepositorySearchQuery): Promise<Repository[]> {
    const search = async (q: string, n = perPage, s: string = sort) => {
      const { body } = await this.get(`/search/repositories?${query({ per_page: n, sort: s, order, q })}`);
      return (body.items ?? []).map((r: Json) => toRepository(r, null)) as Repository[];
    };
    const url = publicUrlSegments(text, ['github.com', ...(this.ctx.host ? [new URL(originOf(this.ctx.host)).host] : [])]);
    if (url) return url.length >= 2 ? search(`in:name ${url[0]}/${url[1]} is:public`) : [];
    if (text.includes('/')) {
      const [owner, ...rest] = text.split('/');
      return search(`org:${owner} in:name ${rest.join('/')}`);
    }
    const [{ body: me }, { body: orgs }] = await Promise.all([this.get('/user'), this.get<Json[]>('/user/orgs')]);
    const logins = orgs.map((o) => textOf(o.login));
    const wanted = normalise(text);
    return dedupeById(
      await settleAll([
        search(`in:name ${text} user:${me.login}`),
        ...logins.map((org) => search(`${text} org:${org}`)),
        // Organisations whose name resembles the query: their most starred repositories.
        ...logins.filter((org) => fuzzyMatch(normalise(org), wanted)).map((org) => search(`org:${org}`, 2, 'stars')),
      ]),
    );
  }

  async branches(repository: string, page: number, perPage: number): Promise<PaginatedBranches> {
    const path = repositoryPath('github', repository, 2);
    const answer = await this.get<Json[]>(`/repos/${path}/branches?${query({ per_page: perPage, page })}`);
    return {
      branches: answer.body.map((b) => ({
        name: textOf(b.name),
        commit_sha: str(b.commit?.sha) ?? '',
        protected: b.protected === true,
        last_push_date: str(b.commit?.commit?.committer?.date),
      })),
      has_next_page: hasNextLink(answer.link),
      current_page: page,
      per_page: perPage,
      total_count: null,
    };
  }

  async searchBranches(repository: string, text: string, perPage: number): Promise<Branch[]> {
    repositoryPath('github', repository, 2);
    const [owner, name] = repository.split('/');
    const data = await this.graphql(BRANCH_SEARCH, { owner, name, query: text, perPage: Math.min(Math.max(perPage, 1), 100) });
    if (!data.repository) throw new ProviderError('github', 'not_found', 'Not found on github');
    return (data.repository.refs?.nodes ?? []).map((node: Json) => {
      const commit = node.target?.__typename === 'Commit' ? node.target : null;
      // GitHub branch search does not query protection (reference).
      return { name: textOf(node.name), commit_sha: str(commit?.oid) ?? '', protected: false, last_push_date: str(commit?.committedDate) };
    });
  }

  async suggestedTasks(): Promise<SuggestedTask[]> {
    const { body: me } = await this.get('/user');
    const login = String(me.login);
    // Pull requests first, then issues; one part failing still returns the other (reference).
    const [prs, issues] = await Promise.allSettled([this.graphql(OPEN_PULL_REQUESTS, { login }), this.graphql(OPEN_ISSUES, { login })]);
    if (prs.status === 'rejected' && issues.status === 'rejected') throw prs.reason;
    const tasks: SuggestedTask[] = [];
    for (const pr of prs.status === 'fulfilled' ? (prs.value.user?.pullRequests?.nodes ?? []) : []) {
      const taskType = classifyPullRequest(pr);
      if (taskType)
        tasks.push({
          git_provider: 'github',
          task_type: taskType,
          repo: textOf(pr.repository?.nameWithOwner),
          issue_number: wholeOf(pr.number),
          title: textOf(pr.title),
        });
    }
    for (const issue of issues.status === 'fulfilled' ? (issues.value.user?.issues?.nodes ?? []) : []) {
      tasks.push({
        git_provider: 'github',
        task_type: 'OPEN_ISSUE',
        repo: textOf(issue.repository?.nameWithOwner),
        issue_number: wholeOf(issue.number),
        title: textOf(issue.title),
      });
    }
    return tasks;
  }

  async listFiles(repository: string, dir: string): Promise<RepositoryFile[]> {
    const { body } = await this.get<Json[]>(`/repos/${repositoryPath('github', repository, 2)}/contents/${encodePath(dir)}`);
    if (!Array.isArray(body)) return [];
    return body
      .filter((item) => item.type === 'file')
      .map((item) => ({ name: textOf(item.name), path: textOf(item.path ?? `${dir}/${item.name}`) }));
  }

  async readFile(repository: string, path: string): Promise<string> {
    const { body } = await this.get(`/repos/${repositoryPath('github', repository, 2)}/contents/${encodePath(path)}`);
    if (typeof body.content !== 'string') throw new ProviderError('github', 'not_found', 'Not found on github');
    return Buffer.from(body.content, body.encoding === 'base64' ? 'base64' : 'utf8').toString('utf8');
  }
}

function toRepository(r: Json, linkHeader: string | null): Repository {
  return {
    id: idOf(r.id),
    full_name: textOf(r.full_name),
    git_provider: 'github',
    is_public: r.private === false,
    stargazers_count: typeof r.stargazers_count === 'number' ? r.stargazers_count : null,
    link_header: linkHeader,
    pushed_at: str(r.pushed_at), // the reference leaves it null; the UI shows it when present
    owner_type: r.owner?.type === 'Organization' ? 'organization' : 'user',
    main_branch: str(r.default_branch),
  };
}

function classifyPullRequest(pr: Json): SuggestedTask['task_type'] | null {
  if (pr.mergeable === 'CONFLICTING') return 'MERGE_CONFLICTS';
  if (pr.commits?.nodes?.[0]?.commit?.statusCheckRollup?.state === 'FAILURE') return 'FAILING_CHECKS';
  if ((pr.reviews?.nodes ?? []).some((r: Json) => r.state === 'CHANGES_REQUESTED' || r.state === 'COMMENTED')) return 'UNRESOLVED_COMMENTS';
  return null; // an open PR with nothing to do is not a task (reference drops OPEN_PR)
}

/** GitHub's /user/repos sorts by created, updated, pushed or full_name only. */
const listSort = (sort: RepositorySort) => (sort === 'stars' ? 'pushed' : sort);
const normalise = (text: string) => text.toLowerCase().replace(/[^a-z0-9]/g, '');
const fuzzyMatch = (a: string, b: string) => a.length > 0 && b.length > 0 && (a.includes(b) || b.includes(a));
