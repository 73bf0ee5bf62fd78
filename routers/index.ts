// The root router: one instance, mounted as tRPC at /trpc and as REST (trpc-to-openapi).
// Inside each router, static paths come before {param} paths (the REST matcher takes the
// first match); test/rest/openapi-inventory.test.ts enforces it.
import { createCallerFactory, router, type Meta } from '../src/trpc.js';
import { appConversationsRouter } from './app-conversations.router.js';
import { authRouter } from './auth.router.js';
import { conversationRuntimeRouter } from './conversation-runtime.router.js';
import { conversationWorkspaceRouter } from './conversation-workspace.router.js';
import { conversationsRouter } from './conversations.router.js';
import { eventsRouter } from './events.router.js';
import { gitProvidersRouter } from './git-providers.router.js';
import { webhooksRouter } from './webhooks.router.js';
import { sandboxSpecsRouter } from './sandbox-specs.router.js';
import { sandboxesRouter } from './sandboxes.router.js';
import { secretsRouter } from './secrets.router.js';
import { settingsRouter } from './settings.router.js';
import { userRouter } from './user.router.js';
import { optionsRouter } from './options.router.js';

export const appRouter = router({
  auth: authRouter,
  settings: settingsRouter,
  gitProviders: gitProvidersRouter,
  secrets: secretsRouter,
  sandboxSpecs: sandboxSpecsRouter,
  sandboxes: sandboxesRouter,
  appConversations: appConversationsRouter,
  conversations: conversationsRouter,
  conversationRuntime: conversationRuntimeRouter,
  conversationWorkspace: conversationWorkspaceRouter,
  events: eventsRouter,
  webhooks: webhooksRouter,
  options: optionsRouter,
  user: userRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);

export interface ProcedureInfo {
  path: string;
  type: 'query' | 'mutation' | 'subscription';
  meta: Meta | undefined;
  inputs: unknown[];
}

/** Every procedure of the app router with its meta (for the REST layer and tests). */
export const PROCEDURES: ReadonlyMap<string, ProcedureInfo> = new Map(
  Object.entries(appRouter._def.procedures as unknown as Record<string, { _def: Omit<ProcedureInfo, 'path'> }>).map(([path, p]) => [
    path,
    { path, type: p._def.type, meta: p._def.meta, inputs: p._def.inputs },
  ]),
);
