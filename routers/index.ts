// The root router: one instance, mounted as tRPC at /trpc and as REST (trpc-to-openapi).
// Inside each router, static paths come before {param} paths (the REST matcher takes the
// first match); test/rest/openapi-inventory.test.ts enforces it.
import { createCallerFactory, router } from '../src/trpc.js';
import { gitProvidersRouter } from './git-providers.router.js';
import { secretsRouter } from './secrets.router.js';
import { settingsRouter } from './settings.router.js';

export const appRouter = router({
  settings: settingsRouter,
  gitProviders: gitProvidersRouter,
  secrets: secretsRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
