// A fake of the GitHub REST and GraphQL API (also at /api/v3 and /api/graphql, as GitHub
// Enterprise serves them), over the shared fake world.
import { filesIn, pageOf, sortRepos, type FakeRepo, type FakeWorld } from './data.js';
import { linkHeader, startFakeServer, type FakeAnswer, type FakeProvider, type FakeRequest } from './server.js';

export function startFakeGitHub(): Promise<FakeProvider> {
  return startFakeServer(route, { rateLimitStatus: 403 });
}

const repoJson = (r: FakeRepo) => ({
  id: r.id,
  full_name: r.fullName,
  private: r.private,
  stargazers_count: r.stars,
  pushed_at: r.pushedAt,
  default_branch: r.defaultBranch,
  owner: { login: r.fullName.split('/')[0], type: r.ownerType === 'organization' ? 'Organization' : 'User' },
});

function route(req: FakeRequest, world: FakeWorld): FakeAnswer {
  const path = req.path.replace(/^\/api\/v3(?=\/)/, '');
  const q = req.query;
  if (req.method === 'POST' && (path === '/graphql' || path === '/api/graphql')) return graphql(req.body, world);
  if (path === '/user') {
    const u = world.user;
    return { json: { id: u.id, login: u.login, name: u.name, email: u.email, company: u.company, avatar_url: u.avatar } };
  }
  if (path === '/user/orgs') return { json: world.orgs.map((login) => ({ login })) };
  if (path === '/user/installations') return { json: { installations: [{ id: 7001 }, { id: 7002 }] } };
  if (path === '/user/repos') {
    const perPage = Number(q.get('per_page') ?? 30);
    const page = Number(q.get('page') ?? 1);
    const { items, last } = pageOf(sortRepos(world.repos, q.get('sort')), page, perPage);
    const link = linkHeader(new URL(req.path + '?' + q.toString(), req.base), page, last, true);
    return { json: items.map(repoJson), headers: link ? { link } : {} };
  }
  const installation = /^\/user\/installations\/(\d+)\/repositories$/.exec(path);
  if (installation) return { json: { total_count: 1, repositories: world.repos.slice(0, 1).map(repoJson) } };
  if (path === '/search/repositories')
    return {
      json: {
        items: search(world, q.get('q') ?? '')
          .slice(0, Number(q.get('per_page') ?? 30))
          .map(repoJson),
      },
    };
  const repoMatch = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
  if (!repoMatch) return null;
  const repo = world.repos.find((r) => r.fullName === `${decodeURIComponent(repoMatch[1]!)}/${decodeURIComponent(repoMatch[2]!)}`);
  if (!repo) return null;
  const rest = repoMatch[3] ?? '';
  if (rest === '') return { json: repoJson(repo) };
  if (rest === '/branches') {
    const page = Number(q.get('page') ?? 1);
    const { items, last } = pageOf(repo.branches, page, Number(q.get('per_page') ?? 30));
    const link = linkHeader(new URL(req.path + '?' + q.toString(), req.base), page, last, true);
    return {
      json: items.map((b) => ({ name: b.name, commit: { sha: b.sha }, protected: b.protected ?? false })),
      headers: link ? { link } : {},
    };
  }
  if (rest.startsWith('/contents/')) {
    const file = decodeURIComponent(rest.slice('/contents/'.length));
    if (repo.files[file] !== undefined) {
      return {
        json: {
          type: 'file',
          name: file.split('/').pop(),
          path: file,
          encoding: 'base64',
          content: Buffer.from(repo.files[file]!).toString('base64'),
        },
      };
    }
    const entries = filesIn(repo, file);
    return entries.length ? { json: entries.map((p) => ({ type: 'file', name: p.split('/').pop(), path: p })) } : null;
  }
  return null;
}

/** GitHub's search qualifiers the service uses: user:, org:, is:public, in:name. */
function search(world: FakeWorld, text: string): FakeRepo[] {
  const words = text.split(/\s+/).filter(Boolean);
  const owner = words.find((w) => w.startsWith('user:') || w.startsWith('org:'))?.split(':')[1];
  const publicOnly = words.includes('is:public');
  const term = words
    .filter((w) => !w.includes(':'))
    .join(' ')
    .toLowerCase();
  return sortRepos(world.repos, 'stars').filter(
    (r) =>
      (!owner || r.fullName.startsWith(`${owner}/`)) &&
      (!publicOnly || !r.private) &&
      (term === '' || (term.includes('/') ? r.fullName.toLowerCase() : r.fullName.split('/')[1]!.toLowerCase()).includes(term)),
  );
}

function graphql(body: { query: string; variables: Record<string, any> }, world: FakeWorld): FakeAnswer {
  const v = body.variables ?? {};
  if (body.query.includes('SearchBranches')) {
    const repo = world.repos.find((r) => r.fullName === `${v.owner}/${v.name}`);
    if (!repo) return { json: { data: { repository: null }, errors: [{ type: 'NOT_FOUND', message: 'Could not resolve' }] } };
    const nodes = repo.branches
      .filter((b) => b.name.includes(v.query))
      .sort((a, b) => a.name.localeCompare(b.name))
      .slice(0, v.perPage)
      .map((b) => ({ name: b.name, target: { __typename: 'Commit', oid: b.sha, committedDate: b.date } }));
    return { json: { data: { repository: { refs: { nodes } } } } };
  }
  if (body.query.includes('OpenPullRequests')) {
    const nodes = world.pullRequests.map((pr) => ({
      number: pr.number,
      title: pr.title,
      repository: { nameWithOwner: pr.repo },
      mergeable: pr.conflicting ? 'CONFLICTING' : 'MERGEABLE',
      commits: { nodes: [{ commit: { statusCheckRollup: { state: pr.failingChecks ? 'FAILURE' : 'SUCCESS' } } }] },
      reviews: { nodes: pr.changesRequested ? [{ state: 'CHANGES_REQUESTED' }] : [] },
    }));
    return { json: { data: { user: { pullRequests: { nodes } } } } };
  }
  if (body.query.includes('AssignedIssues')) {
    const nodes = world.issues.map((i) => ({ number: i.number, title: i.title, repository: { nameWithOwner: i.repo } }));
    return { json: { data: { user: { issues: { nodes } } } } };
  }
  return { json: { errors: [{ message: 'unknown query' }] } };
}
