// Browsing the user's repositories with the stored provider tokens (/api/user/*): the web UI's
// repository and branch pickers, suggested tasks and repository microagents. Every model field
// is always present, null when unknown (the reference serializes its models that way).
import { z } from 'zod';
import { ProviderTypeSchema, queryInt } from './common.schema.js';

/** Providers that can be browsed (enterprise_sso has no API). */
export const GitProviderSchema = z.enum(['github', 'gitlab', 'bitbucket']).meta({ id: 'GitProvider' });
export type GitProvider = z.infer<typeof GitProviderSchema>;

export const GitUserSchema = z
  .object({
    id: z.string(),
    login: z.string(),
    avatar_url: z.string(),
    company: z.string().nullable(),
    name: z.string().nullable(),
    email: z.string().nullable(),
  })
  .meta({ id: 'GitUser' });
export type GitUser = z.infer<typeof GitUserSchema>;

export const RepositorySchema = z
  .object({
    id: z.string(),
    full_name: z.string(),
    git_provider: GitProviderSchema,
    is_public: z.boolean(),
    stargazers_count: z.number().int().nullable(),
    // Every item of a page carries the page's Link header; the UI reads the first item's.
    link_header: z.string().nullable(),
    pushed_at: z.string().nullable(),
    owner_type: z.enum(['user', 'organization']).nullable(),
    main_branch: z.string().nullable(),
  })
  .meta({ id: 'Repository' });
export type Repository = z.infer<typeof RepositorySchema>;

export const BranchSchema = z
  .object({ name: z.string(), commit_sha: z.string(), protected: z.boolean(), last_push_date: z.string().nullable() })
  .meta({ id: 'Branch' });
export type Branch = z.infer<typeof BranchSchema>;

export const PaginatedBranchesSchema = z
  .object({
    branches: z.array(BranchSchema),
    has_next_page: z.boolean(),
    current_page: z.number().int(),
    per_page: z.number().int(),
    total_count: z.number().int().nullable(),
  })
  .meta({ id: 'PaginatedBranchesResponse' });
export type PaginatedBranches = z.infer<typeof PaginatedBranchesSchema>;

export const SuggestedTaskSchema = z
  .object({
    git_provider: GitProviderSchema,
    task_type: z.enum(['MERGE_CONFLICTS', 'FAILING_CHECKS', 'UNRESOLVED_COMMENTS', 'OPEN_ISSUE']),
    repo: z.string(),
    issue_number: z.number().int(),
    title: z.string(),
  })
  .meta({ id: 'SuggestedTask' });
export type SuggestedTask = z.infer<typeof SuggestedTaskSchema>;

export const MicroagentSchema = z.object({ name: z.string(), path: z.string(), created_at: z.string() }).meta({ id: 'MicroagentResponse' });
export type Microagent = z.infer<typeof MicroagentSchema>;

export const MicroagentContentSchema = z
  .object({ content: z.string(), path: z.string(), triggers: z.array(z.string()), git_provider: GitProviderSchema.nullable() })
  .meta({ id: 'MicroagentContentResponse' });
export type MicroagentContent = z.infer<typeof MicroagentContentSchema>;

// Inputs. Repository names: "owner/repo" (GitLab: any group depth; microagent routes also take
// "domain/owner/repo"); no empty, "." or ".." segments.
export const repositoryName = () =>
  z
    .string()
    .max(300)
    .regex(/^(?!.*(^|\/)\.{1,2}(\/|$))[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)+$/, 'Input should be a repository name such as owner/repo');
const perPage = (fallback: number) => queryInt().pipe(z.number().min(1).max(100)).default(fallback);
const page = () => queryInt().pipe(z.number().min(1).max(10_000)).default(1);
const searchText = () => z.string().trim().min(1).max(200);

export const RepositorySortSchema = z.enum(['pushed', 'updated', 'created', 'full_name', 'stars']).meta({ id: 'RepositorySort' });

export const InstallationsInputSchema = z.object({ provider: ProviderTypeSchema });

export const RepositoriesInputSchema = z.object({
  selected_provider: ProviderTypeSchema.optional(),
  sort: RepositorySortSchema.default('pushed'),
  page: page(),
  per_page: perPage(30),
  installation_id: z.string().min(1).max(200).optional(),
});
export type RepositoriesInput = z.output<typeof RepositoriesInputSchema>;

export const SearchRepositoriesInputSchema = z.object({
  query: searchText(),
  per_page: perPage(5),
  sort: RepositorySortSchema.default('stars'),
  order: z.enum(['asc', 'desc']).default('desc'),
  selected_provider: ProviderTypeSchema.optional(),
});
export type SearchRepositoriesInput = z.output<typeof SearchRepositoriesInputSchema>;

export const BranchesInputSchema = z.object({ repository: repositoryName(), page: page(), per_page: perPage(30) });

export const SearchBranchesInputSchema = z.object({
  repository: repositoryName(),
  query: searchText(),
  per_page: perPage(30),
  selected_provider: ProviderTypeSchema.optional(),
});

export const MicroagentsInputSchema = z.object({ repository_name: repositoryName() });

export const MicroagentContentInputSchema = z.object({
  repository_name: repositoryName(),
  // A path inside the repository: relative, no "." or ".." segments.
  file_path: z
    .string()
    .max(500)
    .regex(/^(?!.*(^|\/)\.{1,2}(\/|$))[^/\\\u0000-\u001f]+(\/[^/\\\u0000-\u001f]+)*$/, 'Input should be a path inside the repository'),
});
