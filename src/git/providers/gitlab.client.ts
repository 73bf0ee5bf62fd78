// GitLab (gitlab.com or self-hosted at <host>/api/v4): REST for users, projects, branches and
// files; GraphQL for the suggested merge-request tasks.
import type { Branch, GitUser, PaginatedBranches, Repository, SuggestedTask } from '../../../contract/user-git.schema.js';
import {
  allPages,
  hasNextLink,
  publicUrlSegments,
  query,
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

type Json = Record<string, any>;

const AUTHORED_MERGE_REQUESTS = `query {
  currentUser {
    authoredMergeRequests(state: opened, sort: UPDATED_DESC, first: 100) {
      nodes {
        iid
        title
        project { fullPath }
        conflicts
        pipelines(first: 1) { nodes { status } }
        discussions(first: 100) { nodes { notes { nodes { resolvable resolved } } } }
      }
    }
  }
}`;

export class GitLabClient implements GitProviderClient {
  readonly provider = 'gitlab' as const;
  private readonly base: string;
  private readonly graphqlUrl: string;

  constructor(private readonly ctx: ClientContext) {
    this.base = providerApiBase('gitlab', ctx.host, ctx.roots)!;
    this.graphqlUrl = providerGraphqlUrl('gitlab', ctx.host, ctx.roots);
  }

  get host(): string | null {
    return this.ctx.host;
  }

  private get<T = Json>(path: string, expect: 'json' | 'text' = 'json') {
    return this.ctx.http.request<T>(this.base + path, { provider: 'gitlab', host: this.ctx.host, token: this.ctx.token, expect });
  }

  async user(): Promise<GitUser> {
    const { body } = await this.get('/user');
    return {
      id: userIdOf(body),
      login: str(body.username) ?? '',
      avatar_url: str(body.avatar_url) ?? '',
      company: str(body.organization),
      name: str(body.name),
      email: str(body.email),
    };
  }

  async repositories({ page, perPage, sort }: RepositoryPageQuery): Promise<Repository[]> {
    // installation_id has no meaning on GitLab (reference: ignored).
    const answer = await this.get<Json[]>(
      `/projects?${query({ page, per_page: perPage, order_by: orderBy(sort), sort: 'desc', membership: true })}`,
    );
    return answer.body.map((p) => toRepository(p, answer.link ?? ''));
  }

  async allRepositories(sort: RepositorySort): Promise<Repository[]> {
    return allPages(async (page) => {
      const answer = await this.get<Json[]>(
        `/projects?${query({ page, per_page: 100, order_by: orderBy(sort), sort: 'desc', membership: 1 })}`,
      );
      return { items: answer.body.map((p) => toRepository(p, null)), link: answer.link };
    });
  }

  async searchRepositories({ query: text, perPage, sort }: RepositorySearchQuery): Promise<Repository[]> {
    const url = publicUrlSegments(text, ['gitlab.com', ...(this.ctx.host ? [new URL(originOf(this.ctx.host)).host] : [])]);
    if (url) {
      if (url.length < 2) return [];
      const { body } = await this.get(`/projects/${encodeURIComponent(url.join('/'))}`);
      return [toRepository(body, null)];
    }
    const params = {
      page: 1,
      per_page: perPage,
      order_by: orderBy(sort),
      sort: 'desc',
      membership: true,
      search: text,
      search_namespaces: true,
    };
    const answer = await this.get<Json[]>(`/projects?${query(params)}`);
    return answer.body.map((p) => toRepository(p, answer.link ?? ''));
  }

  async branches(repository: string, page: number, perPage: number): Promise<PaginatedBranches> {
    const answer = await this.get<Json[]>(`/projects/${projectId(repository)}/repository/branches?${query({ per_page: perPage, page })}`);
    const total = Number(answer.total);
    return {
      branches: answer.body.map(toBranch),
      // Reference: any Link header meant "more" (GitLab also sends first/last links, so the
      // last page said so too); we read its rel="next".
      has_next_page: hasNextLink(answer.link),
      current_page: page,
      per_page: perPage,
      total_count: answer.total !== null && Number.isInteger(total) ? total : null,
    };
  }

  async searchBranches(repository: string, text: string, perPage: number): Promise<Branch[]> {
    const { body } = await this.get<Json[]>(
      `/projects/${projectId(repository)}/repository/branches?${query({ per_page: perPage, search: text })}`,
    );
    return body.map(toBranch);
  }

  async suggestedTasks(): Promise<SuggestedTask[]> {
    const { body: me } = await this.get('/user');
    const { body: graph } = await this.ctx.http.request<Json>(this.graphqlUrl, {
      provider: 'gitlab',
      host: this.ctx.host,
      token: this.ctx.token,
      method: 'POST',
      json: { query: AUTHORED_MERGE_REQUESTS },
    });
    if (Array.isArray(graph.errors) && graph.errors.length > 0)
      throw new ProviderError('gitlab', 'unavailable', 'gitlab answered a GraphQL error');
    if (typeof graph.data !== 'object' || graph.data === null) throw new TypeError('GraphQL answer without data');
    const tasks: SuggestedTask[] = [];
    for (const mr of graph.data?.currentUser?.authoredMergeRequests?.nodes ?? []) {
      const taskType = classifyMergeRequest(mr);
      if (taskType)
        tasks.push({
          git_provider: 'gitlab',
          task_type: taskType,
          repo: textOf(mr.project?.fullPath),
          issue_number: wholeOf(mr.iid),
          title: textOf(mr.title),
        });
    }
    const { body: issues } = await this.get<Json[]>(
      `/issues?${query({ assignee_username: String(me.username), state: 'opened', scope: 'assigned_to_me' })}`,
    );
    for (const issue of issues) {
      const repo = String(issue.references?.full ?? '')
        .split('#')[0]!
        .trim();
      tasks.push({ git_provider: 'gitlab', task_type: 'OPEN_ISSUE', repo, issue_number: wholeOf(issue.iid), title: textOf(issue.title) });
    }
    return tasks;
  }

  async listFiles(repository: string, dir: string): Promise<RepositoryFile[]> {
    const { body } = await this.get<Json[]>(
      `/projects/${projectId(repository)}/repository/tree?${query({ path: dir, recursive: true, per_page: 100 })}`,
    );
    return body.filter((item) => item.type === 'blob').map((item) => ({ name: textOf(item.name), path: textOf(item.path) }));
  }

  async readFile(repository: string, path: string): Promise<string> {
    const answer = await this.get<string>(
      `/projects/${projectId(repository)}/repository/files/${encodeURIComponent(path)}/raw?ref=HEAD`,
      'text',
    );
    return answer.body;
  }
}

/** GitLab addresses a project by its URL-encoded full path ("group/sub/repo"). */
const projectId = (repository: string) => encodeURIComponent(repository);

function orderBy(sort: RepositorySort): string {
  if (sort === 'created') return 'created_at';
  if (sort === 'full_name') return 'name';
  return 'last_activity_at'; // pushed, updated, stars (reference)
}

function toRepository(p: Json, linkHeader: string | null): Repository {
  return {
    id: idOf(p.id),
    full_name: textOf(p.path_with_namespace),
    git_provider: 'gitlab',
    is_public: p.visibility === 'public',
    stargazers_count: typeof p.star_count === 'number' ? p.star_count : null,
    link_header: linkHeader,
    pushed_at: str(p.last_activity_at), // the reference leaves it null
    owner_type: p.namespace?.kind === 'group' ? 'organization' : 'user',
    main_branch: str(p.default_branch),
  };
}

const toBranch = (b: Json): Branch => ({
  name: textOf(b.name),
  commit_sha: str(b.commit?.id) ?? '',
  protected: b.protected === true,
  last_push_date: str(b.commit?.committed_date),
});

function classifyMergeRequest(mr: Json): SuggestedTask['task_type'] | null {
  if (mr.conflicts) return 'MERGE_CONFLICTS';
  if (mr.pipelines?.nodes?.[0]?.status === 'FAILED') return 'FAILING_CHECKS';
  const notes = (mr.discussions?.nodes ?? []).flatMap((d: Json) => d.notes?.nodes ?? []);
  if (notes.some((n: Json) => n.resolvable && !n.resolved)) return 'UNRESOLVED_COMMENTS';
  return null;
}
