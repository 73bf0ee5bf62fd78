// A fake of the GitLab REST (/api/v4) and GraphQL (/api/graphql) API over the shared world.
import { filesIn, pageOf, sortRepos, type FakeRepo, type FakeWorld } from './data.js';
import { linkHeader, startFakeServer, type FakeAnswer, type FakeProvider, type FakeRequest } from './server.js';

export function startFakeGitLab(): Promise<FakeProvider> {
  return startFakeServer(route);
}

const projectJson = (r: FakeRepo) => ({
  id: r.id,
  path_with_namespace: r.fullName,
  visibility: r.private ? 'private' : 'public',
  star_count: r.stars,
  last_activity_at: r.pushedAt,
  default_branch: r.defaultBranch,
  namespace: { kind: r.ownerType === 'organization' ? 'group' : 'user' },
});

function route(req: FakeRequest, world: FakeWorld): FakeAnswer {
  const q = req.query;
  if (req.method === 'POST' && req.path === '/api/graphql') return graphql(world);
  if (!req.path.startsWith('/api/v4/')) return null;
  const path = req.path.slice('/api/v4'.length);
  if (path === '/user') {
    const u = world.user;
    return { json: { id: u.id, username: u.login, name: u.name, email: u.email, organization: u.company, avatar_url: u.avatar } };
  }
  if (path === '/projects') {
    const orderBy = q.get('order_by');
    let repos = sortRepos(world.repos, orderBy === 'last_activity_at' ? 'pushed' : orderBy);
    const term = q.get('search')?.toLowerCase();
    if (term)
      repos = repos.filter((r) => (q.get('search_namespaces') ? r.fullName : r.fullName.split('/').pop()!).toLowerCase().includes(term));
    return paged(req, repos.map(projectJson));
  }
  if (path === '/issues') {
    return { json: world.issues.map((i) => ({ iid: i.number, title: i.title, references: { full: `${i.repo}#${i.number}` } })) };
  }
  const project = /^\/projects\/([^/]+)(\/.*)?$/.exec(path);
  if (!project) return null;
  const repo = world.repos.find((r) => r.fullName === decodeURIComponent(project[1]!));
  if (!repo) return null;
  const rest = project[2] ?? '';
  if (rest === '') return { json: projectJson(repo) };
  if (rest === '/repository/branches') {
    const term = q.get('search');
    const branches = repo.branches.filter((b) => !term || b.name.includes(term));
    return paged(
      req,
      branches.map((b) => ({ name: b.name, protected: b.protected ?? false, commit: { id: b.sha, committed_date: b.date } })),
    );
  }
  if (rest === '/repository/tree') {
    const entries = filesIn(repo, q.get('path') ?? '', q.get('recursive') === 'true');
    return entries.length ? { json: entries.map((p) => ({ type: 'blob', name: p.split('/').pop(), path: p })) } : null;
  }
  const raw = /^\/repository\/files\/(.+)\/raw$/.exec(rest);
  if (raw) {
    const text = repo.files[decodeURIComponent(raw[1]!)];
    return text === undefined ? null : { text };
  }
  return null;
}

/** GitLab paging: Link with next/first/last (the last page keeps first/last) and X-Total. */
function paged(req: FakeRequest, items: unknown[]): FakeAnswer {
  const page = Number(req.query.get('page') ?? 1);
  const perPage = Number(req.query.get('per_page') ?? 20);
  const { items: slice, last } = pageOf(items, page, perPage);
  const link = linkHeader(new URL(req.path + '?' + req.query.toString(), req.base), page, last, true);
  return { json: slice, headers: { link, 'x-total': String(items.length) } };
}

function graphql(world: FakeWorld): FakeAnswer {
  const nodes = world.pullRequests.map((pr) => ({
    iid: String(pr.number),
    title: pr.title,
    project: { fullPath: pr.repo },
    conflicts: pr.conflicting ?? false,
    pipelines: { nodes: [{ status: pr.failingChecks ? 'FAILED' : 'SUCCESS' }] },
    discussions: { nodes: [{ notes: { nodes: [{ resolvable: true, resolved: !pr.changesRequested }] } }] },
  }));
  return { json: { data: { currentUser: { authoredMergeRequests: { nodes } } } } };
}
