// The 2026 git searches (/api/v1/git/*/search, docs/git-providers.md): the /api/user/* lists
// as pages of {items, next_page_id}, each for one named provider (suggested tasks: all).
import { z } from 'zod';
import { ProviderTypeSchema, queryInt } from './common.schema.js';
import { BranchSchema, repositoryName, RepositorySchema, SuggestedTaskSchema } from './user-git.schema.js';

const limit = (fallback: number) => queryInt().pipe(z.number().gt(0).max(100)).default(fallback);
const pageId = () => z.string().max(100).nullable().optional();

export const InstallationsSearchInputSchema = z.object({ provider: ProviderTypeSchema, page_id: pageId(), limit: limit(100) });

export const RepositoriesSearchInputSchema = z.object({
  provider: ProviderTypeSchema,
  // Without a query: the user's repositories, most recently pushed first; with one: a search.
  query: z.string().max(200).nullable().optional(),
  installation_id: z.string().min(1).max(200).nullable().optional(),
  page_id: pageId(),
  limit: limit(100),
});

export const BranchesSearchInputSchema = z.object({
  provider: ProviderTypeSchema,
  repository: repositoryName(),
  // Clients always send it; empty lists the branches in the provider's order.
  query: z.string().max(200),
  page_id: pageId(),
  limit: limit(30),
});

export const SuggestedTasksSearchInputSchema = z.object({ page_id: pageId(), limit: limit(30) }).prefault({});

const page = <T extends z.ZodType>(item: T, id: string) =>
  z.object({ items: z.array(item), next_page_id: z.string().nullable() }).meta({ id });

export const InstallationPageSchema = page(z.string(), 'InstallationPage');
export const RepositoryPageSchema = page(RepositorySchema, 'RepositoryPage');
export const BranchPageSchema = page(BranchSchema, 'BranchPage');
export const SuggestedTaskPageSchema = page(SuggestedTaskSchema, 'SuggestedTaskPage');
