// What the /api/user/* routes need from one git provider, with the user's token bound in.
// One implementation per provider (github.client.ts, gitlab.client.ts, bitbucket.client.ts),
// all over ProviderHttp; the service (user-git.service.ts) picks providers and maps failures.
import type { Branch, GitProvider, GitUser, PaginatedBranches, Repository, SuggestedTask } from '../../../contract/user-git.schema.js';
import type { ProviderRoots } from './provider-api.js';
import { ProviderError, type ProviderHttp } from './provider-http.js';

export type RepositorySort = 'pushed' | 'updated' | 'created' | 'full_name' | 'stars';

export interface ClientContext {
  http: ProviderHttp;
  token: string;
  /** The stored token's self-hosted host, or null for the public service. */
  host: string | null;
  roots: ProviderRoots;
}

export interface RepositoryPageQuery {
  page: number;
  perPage: number;
  sort: RepositorySort;
  installationId?: string | undefined;
}

export interface RepositorySearchQuery {
  query: string;
  perPage: number;
  sort: RepositorySort;
  order: 'asc' | 'desc';
}

export interface RepositoryFile {
  name: string;
  path: string;
}

export interface GitProviderClient {
  readonly provider: GitProvider;
  /** The stored token's self-hosted host, or null for the configured API root. */
  readonly host: string | null;
  user(): Promise<GitUser>;
  /** GitHub App installation ids or Bitbucket workspaces; undefined where the provider has none. */
  installations?(): Promise<string[]>;
  repositories(query: RepositoryPageQuery): Promise<Repository[]>;
  /** Every repository (up to 1000), for a listing without a provider. */
  allRepositories(sort: RepositorySort): Promise<Repository[]>;
  searchRepositories(query: RepositorySearchQuery): Promise<Repository[]>;
  branches(repository: string, page: number, perPage: number): Promise<PaginatedBranches>;
  searchBranches(repository: string, query: string, perPage: number): Promise<Branch[]>;
  suggestedTasks(): Promise<SuggestedTask[]>;
  /** The files of a directory (GitLab: recursively); ProviderError not_found when it is missing. */
  listFiles(repository: string, dir: string): Promise<RepositoryFile[]>;
  /** A file's text; ProviderError not_found when it is missing. */
  readFile(repository: string, path: string): Promise<string>;
}

/** At most how many repositories "all repositories" collects per provider (reference). */
export const ALL_REPOSITORIES_CAP = 1000;

/** "owner/repo" as escaped path segments; not_found when the provider cannot have that name. */
export function repositoryPath(provider: GitProvider, repository: string, segments?: number): string {
  const parts = repository.split('/');
  if (segments !== undefined && parts.length !== segments) throw new ProviderError(provider, 'not_found', `Not found on ${provider}`);
  return parts.map(encodeURIComponent).join('/');
}

/** A path inside a repository, each segment escaped. */
export const encodePath = (path: string) => path.split('/').map(encodeURIComponent).join('/');

export function query(params: Record<string, string | number | boolean | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) search.set(key, String(value));
  return search.toString();
}

export const hasNextLink = (link: string | null) => /rel="next"/.test(link ?? '');

/** A search query that is a public web URL of the provider ("https://github.com/o/r"): its path segments. */
export function publicUrlSegments(text: string, domains: string[]): string[] | null {
  if (!/^https?:\/\//i.test(text)) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (!domains.some((d) => url.host === d || url.host.endsWith(`.${d}`))) return null;
  return url.pathname.split('/').filter(Boolean);
}

export function dedupeById<T extends { id: string }>(items: T[]): T[] {
  const seen = new Set<string>();
  return items.filter((item) => !seen.has(item.id) && seen.add(item.id));
}

/** Runs sub-requests side by side; keeps what succeeded, and fails only when all failed. */
export async function settleAll<T>(tasks: Promise<T[]>[]): Promise<T[]> {
  const results = await Promise.allSettled(tasks);
  const ok = results.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed && results.every((r) => r.status === 'rejected')) throw failed.reason;
  return ok;
}

/** Numbered pages (GitHub, GitLab) while the Link header has a next one, up to the cap. */
export async function allPages(page: (n: number) => Promise<{ items: Repository[]; link: string | null }>): Promise<Repository[]> {
  const all: Repository[] = [];
  for (let n = 1; all.length < ALL_REPOSITORIES_CAP; n++) {
    const { items, link } = await page(n);
    all.push(...items);
    if (items.length === 0 || !hasNextLink(link)) break;
  }
  return all.slice(0, ALL_REPOSITORIES_CAP);
}

export const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

// The fields a mapping cannot do without. Anything else means the answer is not the provider's
// (a TypeError, which the service reports as an unexpected answer: 502), never junk passed on.
/** A string field. */
export function textOf(value: unknown): string {
  if (typeof value !== 'string') throw new TypeError('expected a string field');
  return value;
}
/** An id: a string or a finite number. */
export function idOf(value: unknown): string {
  if ((typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && value !== '')) return String(value);
  throw new TypeError('expected an id field');
}
/** A whole number (issue and pull request numbers; GitLab's GraphQL sends them as digit strings). */
export function wholeOf(value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\d{1,15}$/.test(value)) return Number(value);
  throw new TypeError('expected a whole number');
}

/** The user id of a "current user" answer (GitHub, GitLab: id; Bitbucket: account_id or uuid), or null. */
export function userIdIn(body: unknown): string | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const { id, account_id: accountId, uuid } = body as Record<string, unknown>;
  const value = id ?? accountId ?? uuid;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return typeof value === 'string' && value !== '' ? value : null;
}

/** As userIdIn; an answer without one is no user, and nothing of it is echoed (the caller reports a bad answer). */
export function userIdOf(body: unknown): string {
  const id = userIdIn(body);
  if (id === null) throw new TypeError('the current-user answer has no user id');
  return id;
}
