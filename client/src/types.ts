// Input and output types of the procedures, by path and under the contract's names.
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { appRouter } from './app-router.js';

/** The service's tRPC router, as a client sees it (procedures only; no server types). */
export type AppRouter = typeof appRouter;

/** `RouterInputs['settings']['save']` is what `trpc.settings.save.mutate()` takes. */
export type RouterInputs = inferRouterInputs<AppRouter>;
/** `RouterOutputs['settings']['get']` is what `trpc.settings.get.query()` resolves to. */
export type RouterOutputs = inferRouterOutputs<AppRouter>;
/** An input that may be left out is `X | void` in RouterInputs; the named types are the X. */
type Given<T> = Exclude<T, void>;

export type Settings = RouterOutputs['settings']['get'];
export type SaveSettingsInput = Given<RouterInputs['settings']['save']>;
export type McpConfig = NonNullable<Settings['mcp_config']>;
export type AddGitProvidersInput = Given<RouterInputs['gitProviders']['add']>;
export type ProviderType = keyof Settings['provider_tokens_set'];
export type CustomSecret = RouterOutputs['secrets']['list']['custom_secrets'][number];
export type SandboxSpecInfo = RouterOutputs['sandboxSpecs']['search']['items'][number];
export type SandboxInfo = RouterOutputs['sandboxes']['start'];
export type SandboxStatus = SandboxInfo['status'];
export type AppConversationStartRequest = Given<RouterInputs['appConversations']['start']>;
export type AppConversationStartTask = RouterOutputs['appConversations']['start'];
export type StartTaskStatus = AppConversationStartTask['status'];
export type AppConversation = RouterOutputs['appConversations']['search']['items'][number];
export type ConversationInfo = RouterOutputs['conversations']['list']['results'][number];
export type SessionInfo = RouterOutputs['auth']['session'];
// Budgets (docs/budgets.md).
export type UpdateAppConversationInput = Given<RouterInputs['appConversationActions']['update']>;
/** What a conversation has cost and the budget in force (null before its first report, unless a budget is set). */
export type MetricsSnapshot = NonNullable<AppConversation['metrics']>;
export type TokenUsage = NonNullable<MetricsSnapshot['accumulated_token_usage']>;
/** Why a conversation's agent was stopped: its own budget, or its owner's monthly cap. */
export type BudgetStopReason = NonNullable<AppConversation['execution_status_reason']>;
export type UserBudget = RouterOutputs['budgets']['get'];
/** What a subscription yields (its `onData` argument). */
type Yielded<T> = T extends AsyncIterable<infer Y> ? Y : never;
/** A conversation's event as events.watch delivers it (docs/frontend.md): the agent SDK's kinds, narrowed on `kind`. */
export type AgentEvent = Yielded<AppRouter['events']['watch']['_def']['$types']['output']>['data'];
