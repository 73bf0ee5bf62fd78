// Build-time type carrier. `appRouter` is never imported at runtime (its value is undefined):
// it exists so that the emitted app-router.d.ts spells the router's client view out in full,
// with no import of the server's modules (context, database, Kubernetes…). index.ts turns it
// back into the AppRouter type.
import type { TRPCBuiltRouter } from '@trpc/server';
import type { AppRouter as ServerAppRouter } from '../../routers/index.js';
import { typeOf, type ClientProcedures, type ClientRoot } from './router-view.js';

export const appRouter = typeOf<TRPCBuiltRouter<ClientRoot<ServerAppRouter>, ClientProcedures<ServerAppRouter>>>();
