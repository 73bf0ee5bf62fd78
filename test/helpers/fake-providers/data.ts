// The world the git provider fakes serve: one user's repositories, branches, files, pull
// requests and issues, in neutral terms; each fake renders it in its provider's wire shapes.
export interface FakeBranch {
  name: string;
  sha: string;
  protected?: boolean;
  date: string;
}

export interface FakeRepo {
  id: number;
  /** owner/name (GitLab: group/sub/name). */
  fullName: string;
  private: boolean;
  stars: number;
  ownerType: 'user' | 'organization';
  defaultBranch: string;
  pushedAt: string;
  createdAt: string;
  branches: FakeBranch[];
  /** path → text. */
  files: Record<string, string>;
}

export interface FakePullRequest {
  repo: string;
  number: number;
  title: string;
  conflicting?: boolean;
  failingChecks?: boolean;
  changesRequested?: boolean;
}

export interface FakeIssue {
  repo: string;
  number: number;
  title: string;
}

export interface FakeWorld {
  user: { id: number; login: string; name: string; email: string | null; company: string | null; avatar: string };
  orgs: string[];
  repos: FakeRepo[];
  pullRequests: FakePullRequest[];
  issues: FakeIssue[];
}

const day = (n: number) => new Date(Date.UTC(2025, 0, 1 + n)).toISOString().replace('.000Z', 'Z');

/** A user "octo" with `count` repositories: even ones personal, odd ones in org "acme". */
export function makeWorld(count = 45): FakeWorld {
  const repos: FakeRepo[] = [];
  for (let i = 1; i <= count; i++) {
    const owner = i % 2 === 0 ? 'octo' : 'acme';
    repos.push({
      id: 1000 + i,
      fullName: `${owner}/repo-${String(i).padStart(2, '0')}`,
      private: i % 3 === 0,
      stars: (i * 7) % 50,
      ownerType: owner === 'acme' ? 'organization' : 'user',
      defaultBranch: 'main',
      pushedAt: day(i), // repo-45 is the most recently pushed
      createdAt: day(100 - i),
      branches: [{ name: 'main', sha: `sha-main-${i}`, protected: true, date: day(i) }],
      files: {},
    });
  }
  const widgets = repos.find((r) => r.fullName === 'acme/repo-01')!;
  widgets.fullName = 'acme/widgets';
  widgets.branches = Array.from({ length: 35 }, (_, k) => ({
    name: k === 0 ? 'main' : `feature-${String(k).padStart(2, '0')}`,
    sha: `sha-${k}`,
    date: day(k),
  }));
  widgets.branches.push({ name: 'release/1.0', sha: 'sha-release', protected: true, date: day(50) });
  widgets.files = {
    '.cursorrules': 'Always write tests.',
    '.openhands/microagents/testing.md': '---\ntriggers:\n  - test\n  - pytest\n---\nRun the tests with npm test.\n',
    '.openhands/microagents/README.md': 'Not a microagent.',
    '.openhands/microagents/notes.txt': 'Not markdown.',
  };
  return {
    user: {
      id: 42,
      login: 'octo',
      name: 'Octo Cat',
      email: 'octo@example.test',
      company: 'Acme',
      avatar: 'https://avatars.example.test/42',
    },
    orgs: ['acme', 'widgets-inc'],
    repos,
    pullRequests: [
      { repo: 'acme/widgets', number: 11, title: 'Conflicting change', conflicting: true },
      { repo: 'acme/widgets', number: 12, title: 'Red build', failingChecks: true },
      { repo: 'octo/repo-02', number: 13, title: 'Needs changes', changesRequested: true },
      { repo: 'octo/repo-02', number: 14, title: 'All good' },
    ],
    issues: [{ repo: 'acme/widgets', number: 21, title: 'Crash on start' }],
  };
}

export function sortRepos(repos: FakeRepo[], sort: string | null): FakeRepo[] {
  const copy = [...repos];
  if (sort === 'full_name' || sort === 'name') return copy.sort((a, b) => a.fullName.localeCompare(b.fullName));
  if (sort === 'created' || sort === 'created_at' || sort === '-created_on')
    return copy.sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  if (sort === 'stars') return copy.sort((a, b) => b.stars - a.stars);
  return copy.sort((a, b) => b.pushedAt.localeCompare(a.pushedAt));
}

export function pageOf<T>(items: T[], page: number, perPage: number): { items: T[]; hasNext: boolean; last: number } {
  const start = (page - 1) * perPage;
  return {
    items: items.slice(start, start + perPage),
    hasNext: start + perPage < items.length,
    last: Math.max(1, Math.ceil(items.length / perPage)),
  };
}

/** The files directly in `dir` (or below it when recursive). */
export function filesIn(repo: FakeRepo, dir: string, recursive = false): string[] {
  const prefix = dir ? `${dir}/` : '';
  return Object.keys(repo.files).filter((p) => p.startsWith(prefix) && (recursive || !p.slice(prefix.length).includes('/')));
}
