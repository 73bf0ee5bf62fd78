// The 2026 git searches (/api/v1/git/*/search) over the same provider clients, failures and
// host rules as /api/user/* (user-git.service.ts), as pages of {items, next_page_id}. Where the
// provider pages (a user's repositories, a repository's branches) a page id is the provider's
// page number and the next one exists when the provider says so; where it answers at once (an
// installation list, a search, the suggested tasks) the page id is an offset into that answer.
import type { ProviderType } from '../../contract/common.schema.js';
import { pageOffset } from '../../contract/common.schema.js';
import type { Branch, Repository, SuggestedTask } from '../../contract/user-git.schema.js';
import { hasNextLink } from './providers/provider-client.js';
import type { UserGitService } from './user-git.service.js';

/** How many results one search asks a provider for (its most); later pages are taken from them. */
const SEARCH_RESULTS = 100;

interface Page<T> {
  items: T[];
  next_page_id: string | null;
}

interface Paging {
  page_id?: string | null | undefined;
  limit: number;
}

export class GitSearchService {
  constructor(private readonly git: UserGitService) {}

  async installations(userId: string, input: Paging & { provider: ProviderType }): Promise<Page<string>> {
    return slice(await this.git.installations(userId, input.provider), input);
  }

  async repositories(
    userId: string,
    input: Paging & { provider: ProviderType; query?: string | null | undefined; installation_id?: string | null | undefined },
  ): Promise<Page<Repository>> {
    const query = input.query?.trim();
    if (query) {
      const search = { query, per_page: SEARCH_RESULTS, sort: 'stars' as const, order: 'desc' as const, selected_provider: input.provider };
      return slice(await this.git.searchRepositories(userId, search), input);
    }
    const page = pageNumber(input.page_id);
    const items = await this.git.repositories(userId, {
      selected_provider: input.provider,
      sort: 'pushed',
      page,
      per_page: input.limit,
      ...(input.installation_id ? { installation_id: input.installation_id } : {}),
    });
    // Every item carries the provider's Link header of the page (Bitbucket's paging made one).
    return { items, next_page_id: hasNextLink(items[0]?.link_header ?? null) ? String(page + 1) : null };
  }

  async branches(userId: string, input: Paging & { provider: ProviderType; repository: string; query: string }): Promise<Page<Branch>> {
    const query = input.query.trim();
    if (query) return slice(await this.git.searchBranches(userId, input.repository, query, SEARCH_RESULTS, input.provider), input);
    const page = pageNumber(input.page_id);
    const found = await this.git.branches(userId, input.repository, page, input.limit, input.provider);
    return { items: found.branches, next_page_id: found.has_next_page ? String(page + 1) : null };
  }

  async suggestedTasks(userId: string, input: Paging): Promise<Page<SuggestedTask>> {
    return slice(await this.git.suggestedTasks(userId), input);
  }
}

/** A page of a list the provider gave at once; the page id is an offset into it. */
function slice<T>(all: T[], { page_id, limit }: Paging): Page<T> {
  const offset = pageOffset(page_id);
  return { items: all.slice(offset, offset + limit), next_page_id: offset + limit < all.length ? String(offset + limit) : null };
}

/** A provider page number (1 when the id is none or no page number). */
function pageNumber(pageId: string | null | undefined): number {
  const page = Number.parseInt(pageId ?? '', 10);
  return Number.isFinite(page) && page >= 1 && page <= 10_000 ? page : 1;
}
