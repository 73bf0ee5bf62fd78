// A fake of the Bitbucket Cloud API (/2.0): workspaces, repositories, branches and sources,
// paged with the body's `next`, over the shared world (owners are workspaces).
import { filesIn, pageOf, sortRepos, type FakeRepo, type FakeWorld } from './data.js';
import { startFakeServer, type FakeAnswer, type FakeProvider, type FakeRequest } from './server.js';

export function startFakeBitbucket(): Promise<FakeProvider> {
  return startFakeServer(route);
}

const repoJson = (r: FakeRepo) => ({
  uuid: `{${String(r.id).padStart(8, '0')}-0000-4000-8000-000000000000}`,
  slug: r.fullName.split('/')[1],
  workspace: { slug: r.fullName.split('/')[0] },
  is_private: r.private,
  updated_on: r.pushedAt,
  mainbranch: { name: r.defaultBranch },
});

function route(req: FakeRequest, world: FakeWorld): FakeAnswer {
  if (!req.path.startsWith('/2.0/')) return null;
  const path = req.path.slice('/2.0'.length);
  const q = req.query;
  if (path === '/user') {
    const u = world.user;
    return { json: { account_id: `acc-${u.id}`, username: u.login, display_name: u.name, links: { avatar: { href: u.avatar } } } };
  }
  if (path === '/workspaces') {
    const workspaces = [...new Set(world.repos.map((r) => r.fullName.split('/')[0]!))].map((slug) => ({ slug }));
    return paged(req, workspaces, 'pagelen');
  }
  const list = /^\/repositories\/([^/]+)\/?$/.exec(path);
  if (list) {
    const workspace = decodeURIComponent(list[1]!);
    const name = /^name~"(.*)"$/.exec(q.get('q') ?? '')?.[1]?.toLowerCase();
    const repos = sortRepos(world.repos, q.get('sort') === '-updated_on' ? 'pushed' : q.get('sort'))
      .filter((r) => r.fullName.startsWith(`${workspace}/`))
      .filter((r) => !name || r.fullName.split('/')[1]!.toLowerCase().includes(name));
    return paged(req, repos.map(repoJson), 'pagelen');
  }
  const repoMatch = /^\/repositories\/([^/]+)\/([^/]+)(\/.*)?$/.exec(path);
  if (!repoMatch) return null;
  const repo = world.repos.find((r) => r.fullName === `${decodeURIComponent(repoMatch[1]!)}/${decodeURIComponent(repoMatch[2]!)}`);
  if (!repo) return null;
  const rest = repoMatch[3] ?? '';
  if (rest === '') return { json: repoJson(repo) };
  if (rest === '/refs/branches') {
    const name = /^name~"(.*)"$/.exec(q.get('q') ?? '')?.[1];
    const branches = repo.branches
      .filter((b) => !name || b.name.includes(name))
      .map((b) => ({ name: b.name, target: { hash: b.sha, date: b.date } }));
    return paged(req, branches, 'pagelen');
  }
  const src = /^\/src\/([^/]+)\/(.*?)\/?$/.exec(rest);
  if (src) {
    const file = decodeURIComponent(src[2]!);
    if (repo.files[file] !== undefined) return { text: repo.files[file]! };
    const entries = filesIn(repo, file);
    return entries.length ? { json: { values: entries.map((p) => ({ type: 'commit_file', path: p })) } } : null;
  }
  return null;
}

/** Bitbucket paging: {values, page, pagelen, size, next}. */
function paged(req: FakeRequest, items: unknown[], sizeParam: string): FakeAnswer {
  const page = Number(req.query.get('page') ?? 1);
  const perPage = Number(req.query.get(sizeParam) ?? 10);
  const { items: values, hasNext } = pageOf(items, page, perPage);
  const next = new URL(req.path + '?' + req.query.toString(), req.base);
  next.searchParams.set('page', String(page + 1));
  return { json: { values, page, pagelen: perPage, size: items.length, ...(hasNext ? { next: next.toString() } : {}) } };
}
